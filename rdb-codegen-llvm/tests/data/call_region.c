/* Loads a list app's debug module like a replayer would (dlopen, then the
 * `__rdb_entry_<id>(void **argv)` convention) and calls its region with
 * hand-built program objects: `head`, `list_len` and `value`. */
#include <dlfcn.h>
#include <stdio.h>

struct node {
  int value;
  struct node *next;
};

static long list_len(const struct node *n) {
  long len = 0;
  for (; n; n = n->next)
    len++;
  return len;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  void (*entry)(void **) = (void (*)(void **))dlsym(module, "__rdb_entry_1");
  if (!entry) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  struct node c = {9, 0}, b = {5, &c}, a = {1, &b};
  struct node *head = &a;
  int value = 5;
  void *args[3] = {&head, (void *)list_len, &value};
  entry(args);   /* 3 elements: remembered, nothing printed */
  b.next = 0;    /* the tail is lost */
  value = 7;
  entry(args);   /* prints: shrank from 3 to 2, and the list */
  fflush(stdout);
  return 0;
}
