/* A balance gets corrupted: copying the owner's name writes one byte past the
 * name, into the balance. The callback test watches the account with
 * RDB_ON_WRITE (account.rdb.c) and finds the line of that write. */
#include <stdio.h>

static struct account {
    char owner[8];
    long balance;
} account;

static void deposit(long amount) {
    account.balance += amount;
}

static void set_owner(const char *name) {
    for (int i = 0; i <= 8; i++) /* one past the end: name[8] is the terminating NUL */
        account.owner[i] = name[i];
}

int main(void) {
    deposit(100);
    deposit(28);
    set_owner("Margaret");
    deposit(2);
    printf("%.8s has %ld\n", account.owner, account.balance);
    return 0;
}
