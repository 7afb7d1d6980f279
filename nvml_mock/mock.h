/*
 * mock.h - what the files of the lab's MOCK NVML library share (not an NVIDIA header).
 *
 *   config.c     the configuration file, the card table (cards.tsv), UUIDs, the GPUs
 *   devices.c    Init/Shutdown, error strings, the system calls, GPU handles and queries
 *   events.c     event sets: Xid events and lost GPUs (the faults)
 *   mig.c        MIG: mode, GPU/compute instance profiles and instances, MIG device handles
 *   mig_state.c  the MIG state file every process shares (flock), holders, reset
 *
 * README.md says what the mock imitates and how; docs/gpu-stack.md what NVIDIA's code does over it.
 */
#ifndef NVML_MOCK_H
#define NVML_MOCK_H

#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/stat.h>

#include "nvml.h"

#define MOCK_EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 16
#define MAX_XIDS 256
#define MAX_SETS 64
#define MAX_PROFILES 16                    /* GPU instance profiles of one card */
#define MAX_PLACEMENTS 8
#define MAX_GIS 15                         /* GPU instance IDs 0..14 (8 memory slices) */
#define MAX_CIS 8                          /* compute instance IDs 0..7 within a GPU instance */

/* a GPU handle, or a MIG device handle (mig = 1: GPU instance gi, compute instance ci) */
struct nvmlDevice_st { unsigned int index; int mig; unsigned int gi, ci; };
struct nvmlGpuInstance_st { unsigned int index; unsigned int gi; };
struct nvmlComputeInstance_st { unsigned int index; unsigned int gi, ci; };
struct nvmlEventSet_st {
    int used;
    unsigned long long mask[MAX_GPUS];     /* registered event types per GPU */
    int xids_delivered;                    /* xid lines of the config already delivered */
    int lost_reported[MAX_GPUS];
};

struct xid { char gpu[96]; unsigned long long code; };

struct config {
    char card[64];
    unsigned int count;
    char cards[PATH_MAX];
    char driver_version[32];
    char library_version[32];
    int cuda_version;                      /* 12040 for 12.4 */
    char uuid_seed[128];
    char fault[32];
    int lost[MAX_GPUS];
    char device_nodes[256];
    char mig_state[PATH_MAX];              /* the MIG state file (config.c: default beside the config) */
    struct xid xids[MAX_XIDS];
    int nxids;
};

/* a GPU instance profile of the card: one row `mig` of cards.tsv */
struct profile {
    char name[32];                         /* "1g.5gb" (nvidia-smi prints "MIG 1g.5gb") */
    unsigned int id;                       /* the profile ID nvidia-smi mig -lgip prints */
    unsigned int index;                    /* NVML_GPU_INSTANCE_PROFILE_* (what callers pass) */
    unsigned int instances;
    unsigned long long memory_mib;
    unsigned int sm;
    unsigned int slices;                   /* compute slices ("1g": 1) */
    int engines_known;
    unsigned int dec, enc, ce, jpeg, ofa;
    unsigned int nplacements;
    unsigned int start[MAX_PLACEMENTS], size;
};

struct card {
    char name[96];
    unsigned long long memory_mib;
    int cc_major, cc_minor;
    unsigned int pci_device_id;            /* 0x20B0 for A100-SXM4-40GB */
    unsigned int compute_slices, memory_slices;
    unsigned int nprofiles;
    struct profile profiles[MAX_PROFILES];
};

struct gpu {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char serial[32];
    unsigned int bus;
    unsigned int minor;                    /* the host's index: /dev/nvidia<minor> */
};

/* the MIG state of one GPU, as the state file holds it */
struct gi_state { int used; unsigned int profile_id, start, size; };
struct ci_state { int used; unsigned int profile_id, start, size; };
struct mig_gpu {
    unsigned int current, pending;         /* NVML_DEVICE_MIG_DISABLE / _ENABLE */
    struct gi_state gi[MAX_GIS];
    struct ci_state ci[MAX_GIS][MAX_CIS];
};

/* config.c */
extern pthread_mutex_t mock_lock;
extern struct config conf;
extern struct card card;
extern unsigned int ngpus;
extern struct gpu gpus[MAX_GPUS];
extern struct nvmlDevice_st devices[MAX_GPUS];
extern int init_count;
void refresh(void);                        /* with the lock held */
int load_card(void);                       /* with the lock held; 0: unknown card */
unsigned long long fnv(const char *s, unsigned long long h);
void bus_id(unsigned int index, char *out, size_t n, int legacy);

/* devices.c */
struct gpu *gpu_of(nvmlDevice_t device, nvmlReturn_t *ret);
nvmlReturn_t copy_string(char *out, unsigned int length, const char *value);
int initialized(void);
#define GPU_OR_RETURN(device, g) \
    nvmlReturn_t _ret; struct gpu *g = gpu_of(device, &_ret); if (!g) return _ret

/* mig.c */
int mig_handle_valid(const struct nvmlDevice_st *d);
struct nvmlDevice_st *mig_handle(unsigned int index, unsigned int gi, unsigned int ci);
nvmlReturn_t mig_handle_by_uuid(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t mig_attributes(const struct nvmlDevice_st *d, nvmlDeviceAttributes_t *a);
int gpu_index_of(nvmlDevice_t device, nvmlReturn_t *ret);  /* a GPU (not MIG) of a MIG card */
struct mig_gpu state_of(unsigned int index);
nvmlReturn_t gi_fits(const struct mig_gpu *m, const struct profile *p, const unsigned int *want, unsigned int *start);
unsigned int gi_id(unsigned int start, unsigned int size);
const struct profile *profile_by_id(unsigned int id);
nvmlReturn_t mig_name(const struct nvmlDevice_st *d, char *out, unsigned int length);
nvmlReturn_t mig_uuid(const struct nvmlDevice_st *d, char *out, unsigned int length);
nvmlReturn_t mig_memory_mib(const struct nvmlDevice_st *d, unsigned long long *mib);
void mig_uuid_of(unsigned int index, unsigned int gi, unsigned int ci, char *out, size_t n);

/* mig_state.c: every call reads the file under a shared lock; changes take the exclusive one */
int mig_state_read(struct mig_gpu *out, unsigned int index);
FILE *nvml_mock_baked_part(int which);   /* config.c: the baked configuration (0), card rows (1), MIG state (2) */
typedef nvmlReturn_t (*mig_change)(struct mig_gpu *all, void *arg);
nvmlReturn_t mig_state_change(mig_change change, void *arg);
int mig_held(unsigned int index, unsigned int gi, unsigned int ci);
unsigned int mig_cap_minor(unsigned int minor, unsigned int gi, int ci);
int mig_visible(unsigned int index, unsigned int gi, unsigned int ci);

#endif
