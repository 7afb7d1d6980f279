/*
 * mig.c - MIG in the lab's MOCK NVML library: mode, GPU and compute instance profiles and
 * instances, MIG device handles. What it imitates (nvml.h of go-nvml, the version NVIDIA's
 * device plugin pins; the callers: go-nvlib v0.10.0 pkg/nvlib/device/mig_device.go GetProfile,
 * mig-parted v0.12.1 pkg/mig/config/config.go SetMigConfig/ClearMigConfig, pkg/mig/mode/nvml.go):
 *
 * - Mode: nvmlDeviceSetMigMode sets the PENDING mode only; the current mode follows it at the
 *   next GPU reset (nvml_mock_reset, what the reader's `nvidia-smi -r` calls), which also drops
 *   every instance. activationStatus says NVML_ERROR_RESET_REQUIRED while a change is pending.
 * - Profiles: the card's `mig` rows of cards.tsv (CARDS: profile IDs, instances, memory, SM,
 *   engines, placements of the card's real listing), asked for by NVML profile index
 *   (NVML_GPU_INSTANCE_PROFILE_*); any other index -> NVML_ERROR_NOT_SUPPORTED. instanceCount is
 *   never 0 for a profile that answers (go-nvml sizes GetGpuInstances' buffer by it).
 * - Creating a GPU instance: NVML_ERROR_INSUFFICIENT_RESOURCES unless the profile has instances
 *   left, its compute slices fit beside the others', the card's engines (DEC, ENC, CE, JPEG, OFA
 *   of the full-GPU profile) suffice, and a placement of the profile is free - the rules
 *   module_utils/sharing/mig_layout.py plans with. Without a placement the highest free start
 *   is taken: NVIDIA's MIG user guide shows `nvidia-smi mig -cgi 9,3g.20gb` creating GPU instance
 *   ID 2 (placement 4:4) first; the driver's rule is not documented, and mig-parted tries
 *   orderings of a layout until one fits (pkg/mig/config/config.go). GPU instance IDs are
 *   the placement's node in the memory slice tree: size M -> 0; M/2 -> 1, 2; M/4 -> 3..6;
 *   M/8 -> 7..14 (A100: seven 1g.5gb are IDs 7..13, as nvidia-smi mig -lgi lists them).
 * - Compute instances: CI profile index = ID (1, 2, 3, 4, 7 slices...), sizes up to the GPU
 *   instance's, aligned starts; destroying one a container holds -> NVML_ERROR_IN_USE
 *   (mig_state.c); destroying a GPU instance that still has compute instances -> IN_USE.
 * - MIG devices: one per compute instance, ordered by GPU instance ID then CI ID; UUID
 *   MIG-<8-4-4-4-12 hex> derived from the GPU's UUID and the IDs; name "<card> MIG <profile>"
 *   ("1c.3g.20gb" for a compute instance smaller than its GPU instance); memory the GPU
 *   instance's; nvmlDeviceGetHandleByUUID finds them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mock.h"

static struct nvmlDevice_st mig_devs[MAX_GPUS][MAX_GIS][MAX_CIS];

int mig_handle_valid(const struct nvmlDevice_st *d)
{
    return d >= &mig_devs[0][0][0] && d < &mig_devs[0][0][0] + MAX_GPUS * MAX_GIS * MAX_CIS;
}

struct nvmlDevice_st *mig_handle(unsigned int index, unsigned int gi, unsigned int ci)
{
    struct nvmlDevice_st *d = &mig_devs[index][gi][ci];
    *d = (struct nvmlDevice_st){ index, 1, gi, ci };
    return d;
}

const struct profile *profile_by_id(unsigned int id)
{
    unsigned int i;
    for (i = 0; i < card.nprofiles; i++)
        if (card.profiles[i].id == id)
            return &card.profiles[i];
    return NULL;
}

static const struct profile *profile_by_index(unsigned int index)
{
    unsigned int i;
    for (i = 0; i < card.nprofiles; i++)
        if (card.profiles[i].index == index)
            return &card.profiles[i];
    return NULL;
}

/* the GPU index of a GPU handle (not a MIG device); -1 with *ret set */
int gpu_index_of(nvmlDevice_t device, nvmlReturn_t *ret)
{
    struct gpu *g = gpu_of(device, ret);
    if (!g)
        return -1;
    if (device.handle->mig || !card.nprofiles) {
        *ret = NVML_ERROR_NOT_SUPPORTED;   /* a MIG device, or a card without MIG profiles */
        return -1;
    }
    return (int)(g - gpus);
}

struct mig_gpu state_of(unsigned int index)
{
    struct mig_gpu m;
    pthread_mutex_lock(&mock_lock);
    refresh();
    mig_state_read(&m, index);
    pthread_mutex_unlock(&mock_lock);
    return m;
}

void mig_uuid_of(unsigned int index, unsigned int gi, unsigned int ci, char *out, size_t n)
{
    char key[160];
    unsigned long long a, b;
    snprintf(key, sizeof key, "%s/mig/%u/%u", gpus[index].uuid, gi, ci);
    a = fnv(key, 0xcbf29ce484222325ULL);
    b = fnv(key, a ^ 0x9e3779b97f4a7c15ULL);
    snprintf(out, n, "MIG-%08llx-%04llx-%04llx-%04llx-%012llx",
             a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48, b & 0xffffffffffffULL);
}

/* the MIG device's instances; NULL when they are gone */
static const struct profile *mig_lookup(const struct nvmlDevice_st *d, struct mig_gpu *m)
{
    *m = state_of(d->index);
    if (m->current != NVML_DEVICE_MIG_ENABLE || !m->gi[d->gi].used || !m->ci[d->gi][d->ci].used)
        return NULL;
    return profile_by_id(m->gi[d->gi].profile_id);
}

nvmlReturn_t mig_name(const struct nvmlDevice_st *d, char *out, unsigned int length)
{
    struct mig_gpu m;
    const struct profile *p = mig_lookup(d, &m);
    char name[160];
    unsigned int c;
    if (!p)
        return NVML_ERROR_NOT_FOUND;
    c = m.ci[d->gi][d->ci].size;
    if (c == p->slices)
        snprintf(name, sizeof name, "%s MIG %s", card.name, p->name);
    else
        snprintf(name, sizeof name, "%s MIG %uc.%s", card.name, c, p->name);
    return copy_string(out, length, name);
}

nvmlReturn_t mig_uuid(const struct nvmlDevice_st *d, char *out, unsigned int length)
{
    struct mig_gpu m;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (!mig_lookup(d, &m))
        return NVML_ERROR_NOT_FOUND;
    mig_uuid_of(d->index, d->gi, d->ci, uuid, sizeof uuid);
    return copy_string(out, length, uuid);
}

nvmlReturn_t mig_memory_mib(const struct nvmlDevice_st *d, unsigned long long *mib)
{
    struct mig_gpu m;
    const struct profile *p = mig_lookup(d, &m);
    if (!p)
        return NVML_ERROR_NOT_FOUND;
    *mib = p->memory_mib;
    return NVML_SUCCESS;
}

nvmlReturn_t mig_attributes(const struct nvmlDevice_st *d, nvmlDeviceAttributes_t *a)
{
    struct mig_gpu m;
    const struct profile *p = mig_lookup(d, &m);
    if (!p)
        return NVML_ERROR_NOT_FOUND;
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = p->sm * m.ci[d->gi][d->ci].size / p->slices;
    a->sharedCopyEngineCount = p->ce;
    a->sharedDecoderCount = p->dec;
    a->sharedEncoderCount = p->enc;
    a->sharedJpegCount = p->jpeg;
    a->sharedOfaCount = p->ofa;
    a->gpuInstanceSliceCount = p->slices;
    a->computeInstanceSliceCount = m.ci[d->gi][d->ci].size;
    a->memorySizeMB = p->memory_mib;
    return NVML_SUCCESS;
}

/* ---- mode ---- */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    struct mig_gpu m;
    if (i < 0)
        return ret;
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    m = state_of((unsigned int)i);
    *currentMode = m.current;
    *pendingMode = m.pending;
    return NVML_SUCCESS;
}

struct mode_change { unsigned int index, mode; };

static nvmlReturn_t set_pending(struct mig_gpu *all, void *arg)
{
    struct mode_change *c = arg;
    all[c->index].pending = c->mode;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t *activationStatus)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    struct mode_change c;
    struct mig_gpu m;
    if (i < 0)
        return ret;
    if (!activationStatus || (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE))
        return NVML_ERROR_INVALID_ARGUMENT;
    c = (struct mode_change){ (unsigned int)i, mode };
    pthread_mutex_lock(&mock_lock);
    ret = mig_state_change(set_pending, &c);
    mig_state_read(&m, (unsigned int)i);
    pthread_mutex_unlock(&mock_lock);
    *activationStatus = m.pending == m.current ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
    return ret;
}

static nvmlReturn_t reset(struct mig_gpu *all, void *arg)
{
    unsigned int i = *(unsigned int *)arg, g, c;
    for (g = 0; g < MAX_GIS; g++)
        for (c = 0; c < MAX_CIS; c++)
            if (all[i].ci[g][c].used && mig_held(i, g, c))
                return NVML_ERROR_IN_USE;  /* a container uses the GPU */
    memset(all[i].gi, 0, sizeof all[i].gi);
    memset(all[i].ci, 0, sizeof all[i].ci);
    all[i].current = all[i].pending;
    return NVML_SUCCESS;
}

/* a GPU reset (the reader's `nvidia-smi -r`): the pending MIG mode becomes current, instances go */
MOCK_EXPORT nvmlReturn_t nvml_mock_reset(unsigned int index)
{
    nvmlReturn_t ret;
    pthread_mutex_lock(&mock_lock);
    ret = index < ngpus ? mig_state_change(reset, &index) : NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_unlock(&mock_lock);
    return ret;
}

/* ---- MIG device handles ---- */
MOCK_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = (unsigned int)device.handle->mig;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    nvmlReturn_t ret;
    if (gpu_index_of(device, &ret) < 0)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = card.compute_slices;          /* one MIG device per compute slice at most */
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    unsigned int g, c, n = 0;
    struct mig_gpu m;
    if (i < 0)
        return ret;
    if (!migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    m = state_of((unsigned int)i);
    if (m.current != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_FOUND;
    for (g = 0; g < MAX_GIS; g++)
        for (c = 0; c < MAX_CIS; c++)
            if (m.gi[g].used && m.ci[g][c].used && mig_visible((unsigned int)i, g, c) && n++ == index) {
                migDevice->handle = mig_handle((unsigned int)i, g, c);
                return NVML_SUCCESS;
            }
    return NVML_ERROR_NOT_FOUND;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    GPU_OR_RETURN(migDevice, g);
    if (!device || !migDevice.handle->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    device->handle = &devices[g - gpus];
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!id || !device.handle->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = device.handle->gi;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!id || !device.handle->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = device.handle->ci;
    return NVML_SUCCESS;
}

/* The MIG capability minors, as nvml_mock/gpu_view.sh writes /proc/driver/nvidia-caps/mig-minors
 * (the MIG user guide's example layout: config 1, monitor 2, then 9 per GPU instance, 135 per GPU):
 * gpu<minor>/gi<gi>/access = 3 + minor * 135 + gi * 9, its ci<ci>/access the ones after it. */
unsigned int mig_cap_minor(unsigned int minor, unsigned int gi, int ci)
{
    return 3 + minor * 135 + gi * 9 + (ci < 0 ? 0 : 1 + (unsigned int)ci);
}

/* In a container (device_nodes set) a process sees the MIG devices whose capability nodes it was
 * given, as a driver lets a process use an instance only through /dev/nvidia-caps/nvidia-cap<N>
 * of its GPU instance and compute instance (the MIG user guide, "Device Nodes and
 * Capabilities"); on the node itself every one. */
int mig_visible(unsigned int index, unsigned int gi, unsigned int ci)
{
    char node[320];
    const char *dir = conf.device_nodes;
    unsigned int k;
    /* no device_nodes: a process whose /dev has /dev/nvidia-caps was given capability nodes (the
       CDI spec of NVIDIA's DRA driver creates those of the claimed MIG device alone) - the same
       judgment there; without the folder (the node itself, a build machine) every device */
    if (!dir[0] && access("/dev/nvidia-caps", F_OK) == 0)
        dir = "/dev";
    if (!dir[0])
        return 1;
    for (k = 0; k < 2; k++) {
        snprintf(node, sizeof node, "%s/nvidia-caps/nvidia-cap%u", dir,
                 mig_cap_minor(gpus[index].minor, gi, k == 0 ? -1 : (int)ci));
        if (access(node, F_OK) != 0)
            return 0;
    }
    return 1;
}

/* a MIG device by its UUID (devices.c nvmlDeviceGetHandleByUUID asks when no GPU has it) */
nvmlReturn_t mig_handle_by_uuid(const char *uuid, nvmlDevice_t *device)
{
    unsigned int i, g, c;
    char u[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    for (i = 0; i < ngpus; i++) {
        struct mig_gpu m = state_of(i);
        if (m.current != NVML_DEVICE_MIG_ENABLE)
            continue;
        for (g = 0; g < MAX_GIS; g++)
            for (c = 0; c < MAX_CIS; c++) {
                if (!m.gi[g].used || !m.ci[g][c].used || !mig_visible(i, g, c))
                    continue;
                mig_uuid_of(i, g, c, u, sizeof u);
                if (!strcmp(u, uuid)) {
                    device->handle = mig_handle(i, g, c);
                    return NVML_SUCCESS;
                }
            }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* ---- GPU instance profiles ---- */
static void fill_profile(const struct profile *p, nvmlGpuInstanceProfileInfo_t *info)
{
    memset(info, 0, sizeof *info);
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sm;
    info->copyEngineCount = p->ce;
    info->decoderCount = p->dec;
    info->encoderCount = p->enc;
    info->jpegCount = p->jpeg;
    info->ofaCount = p->ofa;
    info->memorySizeMB = p->memory_mib;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info)
{
    nvmlReturn_t ret;
    const struct profile *p;
    if (gpu_index_of(device, &ret) < 0)
        return ret;
    if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(p = profile_by_index(profile)))
        return NVML_ERROR_NOT_SUPPORTED;
    fill_profile(p, info);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info)
{
    nvmlGpuInstanceProfileInfo_t v1;
    nvmlReturn_t ret;
    const struct profile *p;
    unsigned int version;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    version = info->version;
    if (version != nvmlGpuInstanceProfileInfo_v2 && version != nvmlGpuInstanceProfileInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((ret = nvmlDeviceGetGpuInstanceProfileInfo(device, profile, &v1)) != NVML_SUCCESS)
        return ret;
    p = profile_by_index(profile);
    if (version == nvmlGpuInstanceProfileInfo_v3) {
        nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *)info;
        memset(v3, 0, sizeof *v3);
        *v3 = (nvmlGpuInstanceProfileInfo_v3_t){ version, v1.id, v1.sliceCount, v1.instanceCount,
            v1.multiprocessorCount, v1.copyEngineCount, v1.decoderCount, v1.encoderCount, v1.jpegCount,
            v1.ofaCount, v1.memorySizeMB, "", 0 };
        snprintf(v3->name, sizeof v3->name, "MIG %s", p->name);
    } else {
        memset(info, 0, sizeof *info);
        *info = (nvmlGpuInstanceProfileInfo_v2_t){ version, v1.id, 0, v1.sliceCount, v1.instanceCount,
            v1.multiprocessorCount, v1.copyEngineCount, v1.decoderCount, v1.encoderCount, v1.jpegCount,
            v1.ofaCount, v1.memorySizeMB, "" };
        snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    }
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                      nvmlGpuInstancePlacement_t *placements, unsigned int *count)
{
    nvmlReturn_t ret;
    const struct profile *p;
    unsigned int k;
    if (gpu_index_of(device, &ret) < 0)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(p = profile_by_id(profileId)))
        return NVML_ERROR_NOT_SUPPORTED;
    if (placements)
        for (k = 0; k < p->nplacements; k++)
            placements[k] = (nvmlGpuInstancePlacement_t){ p->start[k], p->size };
    *count = p->nplacements;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t device, unsigned int profileId,
                                                                   nvmlGpuInstancePlacement_t *placements, unsigned int *count)
{
    return nvmlDeviceGetGpuInstancePossiblePlacements_v2(device, profileId, placements, count);
}

/* ---- the GPU instance rules: 0 when it fits, the start chosen in *start ---- */
static int engines_fit(const struct mig_gpu *m, const struct profile *add)
{
    const struct profile *full = NULL, *q;
    unsigned int i, dec = add->dec, enc = add->enc, ce = add->ce, jpeg = add->jpeg, ofa = add->ofa;
    for (i = 0; i < card.nprofiles; i++)
        if (card.profiles[i].slices == card.compute_slices
            && (!full || card.profiles[i].memory_mib > full->memory_mib))
            full = &card.profiles[i];
    if (!full || !full->engines_known || !add->engines_known)
        return 1;                          /* engines unknown: not checked (as mig_layout.py) */
    for (i = 0; i < MAX_GIS; i++) {
        if (!m->gi[i].used || !(q = profile_by_id(m->gi[i].profile_id)))
            continue;
        if (!q->engines_known)
            return 1;
        dec += q->dec; enc += q->enc; ce += q->ce; jpeg += q->jpeg; ofa += q->ofa;
    }
    return dec <= full->dec && enc <= full->enc && ce <= full->ce && jpeg <= full->jpeg && ofa <= full->ofa;
}

static int memory_free(const struct mig_gpu *m, unsigned int start, unsigned int size)
{
    unsigned int i;
    for (i = 0; i < MAX_GIS; i++)
        if (m->gi[i].used && start < m->gi[i].start + m->gi[i].size && m->gi[i].start < start + size)
            return 0;
    return start + size <= card.memory_slices;
}

nvmlReturn_t gi_fits(const struct mig_gpu *m, const struct profile *p, const unsigned int *want, unsigned int *start)
{
    unsigned int i, same = 0, slices = p->slices, k;
    const struct profile *q;
    for (i = 0; i < MAX_GIS; i++) {
        if (!m->gi[i].used)
            continue;
        same += m->gi[i].profile_id == p->id;
        if ((q = profile_by_id(m->gi[i].profile_id)))
            slices += q->slices;
    }
    if (same >= p->instances || slices > card.compute_slices || !engines_fit(m, p))
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    for (k = p->nplacements; k-- > 0;) {  /* the highest free start first (mig.c's header) */
        if (want && *want != p->start[k])
            continue;
        if (memory_free(m, p->start[k], p->size)) {
            *start = p->start[k];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

unsigned int gi_id(unsigned int start, unsigned int size)
{
    return card.memory_slices / size - 1 + start / size;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId, unsigned int *count)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    const struct profile *p;
    struct mig_gpu m;
    unsigned int start;
    if (i < 0)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!(p = profile_by_id(profileId)))
        return NVML_ERROR_NOT_SUPPORTED;
    m = state_of((unsigned int)i);
    if (m.current != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    for (*count = 0; gi_fits(&m, p, NULL, &start) == NVML_SUCCESS; (*count)++)
        m.gi[gi_id(start, p->size)] = (struct gi_state){ 1, p->id, start, p->size };
    return NVML_SUCCESS;
}
