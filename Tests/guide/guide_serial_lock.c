/* The guide's "a lock replaced by a serial queue", in C (docs/guide.md). */
#include "guide_support.h"

/* guide:begin serial_lock */
struct account {
    cq_queue_t queue; /* owns `balance`: read and write it only from blocks on this queue */
    long balance;
};

static void add_one(void *context)
{
    struct account *account = context;
    account->balance += 1;
}

static void deposit_one(struct account *account)
{
    cq_async_f(account->queue, account, add_one); /* returns at once; deposits run in order */
}

struct balance_read {
    struct account *account;
    long value;
};

static void read_balance(void *context)
{
    struct balance_read *read = context;
    read->value = read->account->balance;
}

static long current_balance(struct account *account)
{
    struct balance_read read = {account, 0};
    cq_sync_f(account->queue, &read, read_balance); /* after every deposit queued before it */
    return read.value;
}
/* guide:end serial_lock */

static void deposit_from_a_worker(void *context, size_t i)
{
    deposit_one(context);
}

int main(void)
{
    struct account account = {cq_queue_create("account", CQ_QUEUE_SERIAL), 0};
    guide_apply(10000, &account, deposit_from_a_worker); /* deposits from many threads */
    GUIDE_CHECK(current_balance(&account) == 10000);
    cq_release(account.queue);
    return 0;
}
