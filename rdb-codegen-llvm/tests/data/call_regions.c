/* Calls the four regions of regions.c's debug module with hand-built
 * program objects, in argv order of the argument descriptors. */
#include <dlfcn.h>
#include <stdio.h>

struct point { int x, y; };
typedef void (*entry_fn)(void **);

int main(int argc, char **argv) {
  void *m = argc == 2 ? dlopen(argv[1], RTLD_NOW) : 0;
  if (!m) {
    fprintf(stderr, "dlopen failed\n");
    return 1;
  }
  entry_fn e[5];
  for (int i = 1; i <= 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "__rdb_entry_%d", i);
    if (!(e[i] = (entry_fn)dlsym(m, name))) {
      fprintf(stderr, "no %s\n", name);
      return 1;
    }
  }
  int k = 3, calls = 7, total = 12;
  struct point p = {3, 6};
  e[1](0);                               /* no arguments: counts a hit */
  e[1](0);
  void *a2[] = {&k, &calls, &p};
  e[2](a2);
  void *a3[] = {&total};
  e[3](a3);                              /* debug-only state persisted: seen 2 */
  void *a4[] = {&k, &total, &calls};
  e[4](a4);
  fflush(stdout);
  return 0;
}
