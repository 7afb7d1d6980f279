/*
 * events.c - event sets of the lab's MOCK NVML library: Xid events and GPUs that fell off the bus.
 *
 *   xid = N CODE   an event set with GPU N (host index or UUID) registered for Xid events
 *                  delivers it once; lines already in the configuration when the set was
 *                  created count as past
 *   lost = N       one Xid 79 ("GPU has fallen off the bus") per set, then the GPU's handle and
 *                  queries return NVML_ERROR_GPU_IS_LOST (devices.c)
 * The configuration file is polled ten times a second while a caller waits.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock.h"

static struct nvmlEventSet_st sets[MAX_SETS];

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!eventTypes)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    int i;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&mock_lock);
    refresh();
    for (i = 0; i < MAX_SETS && sets[i].used; i++)
        ;
    if (i == MAX_SETS) {
        pthread_mutex_unlock(&mock_lock);
        return NVML_ERROR_MEMORY;
    }
    memset(&sets[i], 0, sizeof sets[i]);
    sets[i].used = 1;
    /* events already in the file happened before this set existed */
    sets[i].xids_delivered = conf.nxids;
    memcpy(sets[i].lost_reported, conf.lost, sizeof conf.lost);
    set->handle = &sets[i];
    pthread_mutex_unlock(&mock_lock);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    GPU_OR_RETURN(device, g);
    if (!set.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&mock_lock);
    set.handle->mask[g - gpus] |= eventTypes;
    pthread_mutex_unlock(&mock_lock);
    return NVML_SUCCESS;
}

static int gpu_index(const char *id)
{
    unsigned int i;
    char *end;
    long n = strtol(id, &end, 10);
    if (*id && !*end) {                    /* a host index (minor number) */
        for (i = 0; i < ngpus; i++)
            if ((long)gpus[i].minor == n)
                return (int)i;
        return -1;
    }
    for (i = 0; i < ngpus; i++)
        if (!strcmp(gpus[i].uuid, id))
            return (int)i;
    return -1;
}

/* the next event for this set, if any; called with the lock held */
static int next_event(struct nvmlEventSet_st *s, nvmlEventData_t *data)
{
    unsigned int i;
    memset(data, 0, sizeof *data);
    data->gpuInstanceId = 0xFFFFFFFF;
    data->computeInstanceId = 0xFFFFFFFF;
    for (i = 0; i < ngpus; i++) {
        if (conf.lost[gpus[i].minor] && !s->lost_reported[gpus[i].minor]) {
            s->lost_reported[gpus[i].minor] = 1;
            if (s->mask[i] & nvmlEventTypeXidCriticalError) {
                data->device.handle = &devices[i];
                data->eventType = nvmlEventTypeXidCriticalError;
                data->eventData = 79;      /* GPU has fallen off the bus */
                return 1;
            }
        }
    }
    if (s->xids_delivered > conf.nxids)    /* the file was rewritten with fewer events */
        s->xids_delivered = conf.nxids;
    while (s->xids_delivered < conf.nxids) {
        struct xid *x = &conf.xids[s->xids_delivered++];
        int idx = gpu_index(x->gpu);
        if (idx >= 0 && (s->mask[idx] & nvmlEventTypeXidCriticalError)) {
            data->device.handle = &devices[idx];
            data->eventType = nvmlEventTypeXidCriticalError;
            data->eventData = x->code;
            return 1;
        }
    }
    return 0;
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    struct timespec begin, now, nap = { 0, 100 * 1000 * 1000 };
    if (!set.handle || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    clock_gettime(CLOCK_MONOTONIC, &begin);
    for (;;) {
        int found;
        pthread_mutex_lock(&mock_lock);
        refresh();
        found = next_event(set.handle, data);
        pthread_mutex_unlock(&mock_lock);
        if (found)
            return NVML_SUCCESS;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - begin.tv_sec) * 1000 + (now.tv_nsec - begin.tv_nsec) / 1000000 >= (long)timeoutms)
            return NVML_ERROR_TIMEOUT;
        nanosleep(&nap, NULL);             /* the file is polled ten times a second */
    }
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return nvmlEventSetWait_v2(set, data, timeoutms);
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    if (!set.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&mock_lock);
    set.handle->used = 0;
    pthread_mutex_unlock(&mock_lock);
    return NVML_SUCCESS;
}
