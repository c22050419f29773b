int f(int n) {
  rdb_begin
  goto out;
  rdb_end
out:
  return n;
}
