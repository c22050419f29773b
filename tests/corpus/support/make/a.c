int a(int x) { return x * 2 + 1; }
