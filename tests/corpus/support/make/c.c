int c(int x) { return x * 4 + 1; }
