/* A shared library whose one function returns VALUE (set with -DVALUE=N). */
int foo(void) { return VALUE; }
