# perl forking three children and collecting their exit statuses.
my @kids;
for my $i (1 .. 3) {
    my $pid = fork();
    if ($pid == 0) { print "child $i\n"; exit $i; }
    push @kids, $pid;
}
my @codes = map { waitpid($_, 0); $? >> 8 } @kids;
print "codes @codes\n";
