/* A shared library whose one function returns the value it was compiled with (-DVALUE=n). */
int lib_value(void) { return VALUE; }
