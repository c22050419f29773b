// Writes to a standard output that is a socket with write, sendto and sendmsg
// (record_replay::output_sent_to_a_socket_is_re_emitted).
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void) {
    if (write(1, "write\n", 6) != 6)
        return 1;
    if (sendto(1, "sendto\n", 7, 0, NULL, 0) != 7)
        return 2;
    char a[] = "send", b[] = "msg\n";
    struct iovec iov[2] = {{a, 4}, {b, 4}};
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    if (sendmsg(1, &m, 0) != 8)
        return 3;
    return 0;
}
