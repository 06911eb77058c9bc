/* The guide's isolation queue (many readers, one writer), in C (docs/guide.md). */
#include "guide_support.h"

/* guide:begin isolation */
#define SLOTS 64

struct table {
    cq_queue_t queue; /* concurrent: reads run side by side, a write runs alone (barrier) */
    int values[SLOTS];
};

struct table_write {
    struct table *table;
    int slot, value;
};

static void write_slot(void *context)
{
    struct table_write *write = context;
    write->table->values[write->slot] = write->value;
    free(write);
}

static void table_set(struct table *table, int slot, int value)
{
    struct table_write *write = malloc(sizeof *write);
    *write = (struct table_write){table, slot, value};
    cq_barrier_async_f(table->queue, write, write_slot); /* the writer does not wait */
}

struct table_read {
    struct table *table;
    int slot, value;
};

static void read_slot(void *context)
{
    struct table_read *read = context;
    read->value = read->table->values[read->slot];
}

static int table_get(struct table *table, int slot)
{
    struct table_read read = {table, slot, 0};
    cq_sync_f(table->queue, &read, read_slot); /* waits for writes queued before it */
    return read.value;
}
/* guide:end isolation */

static _Atomic int mismatches;

static void set_then_get(void *context, size_t i)
{
    struct table *table = context;
    table_set(table, (int)i, (int)i * 2);
    if (table_get(table, (int)i) != (int)i * 2) {
        mismatches++;
    }
}

int main(void)
{
    struct table table = {cq_queue_create("table", CQ_QUEUE_CONCURRENT), {0}};
    guide_apply(SLOTS, &table, set_then_get);
    GUIDE_CHECK(mismatches == 0);
    for (int i = 0; i < SLOTS; i++) {
        GUIDE_CHECK(table_get(&table, i) == i * 2);
    }
    cq_release(table.queue);
    return 0;
}
