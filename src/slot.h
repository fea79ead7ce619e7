/* slot.h - Redis Cluster hash slots (pure) */
#ifndef REDLOCK_SLOT_H
#define REDLOCK_SLOT_H

#include <stddef.h>

#define SLOT_COUNT 16384

int slot_has_tag(const char *key, size_t len);
unsigned slot_of(const char *key, size_t len);
size_t slot_tag(unsigned slot, char tag[4]);

#endif
