// output_by_fd_calls.c with standard output in a regular file: copy_file_range and splice write
// there, and the recorder reads the bytes back from the file they came from.
// rdb-stdout-to-file
// rdb-stdout: "sendfile at an offset\nsendfile at the position\nsplice from a pipe\nsplice from a file\ncopy_file_range from a file\nin a file: sendfile splice copy_file_range\n"
#include "output_by_fd_calls.c"
