#include <dlfcn.h>
int main(int c, char **v) { return !(c == 2 && dlopen(v[1], RTLD_NOW) && dlsym(dlopen(v[1], RTLD_NOW), "__rdb_entry_1")); }
