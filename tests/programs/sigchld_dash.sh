# SIGCHLD into dash's sigsuspend while it waits for a job it killed.
sleep 0.2 & sleep 0.1; kill -INT $!; wait; echo $?
