int shared = 5;
int helper(int x) { return x * 2; }
