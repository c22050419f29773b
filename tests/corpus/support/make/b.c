int b(int x) { return x * 3 + 1; }
