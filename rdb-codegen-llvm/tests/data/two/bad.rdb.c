extern int shared;
int __rdb_peek(void) { return shared; }
