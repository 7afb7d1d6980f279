/*
 * mig_instances.c - GPU and compute instances of the lab's MOCK NVML library: create, destroy,
 * list, info. The rules (what fits, IDs, placements, IN_USE) are mig.c's header's; the state
 * lives in the shared state file (mig_state.c), so every change is one read-modify-write under
 * its exclusive lock and every other process sees it at once.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "mock.h"

static struct nvmlGpuInstance_st gi_handles[MAX_GPUS][MAX_GIS];
static struct nvmlComputeInstance_st ci_handles[MAX_GPUS][MAX_GIS][MAX_CIS];
/* NVML_COMPUTE_INSTANCE_PROFILE_* index (= the CI profile ID) -> compute slices (nvml.h);
 * 1_SLICE_REV1 (7) is not modelled */
static const unsigned int ci_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = { 1, 2, 3, 4, 7, 8, 6, 0 };

static nvmlGpuInstance_t gi_handle(unsigned int index, unsigned int gi)
{
    gi_handles[index][gi] = (struct nvmlGpuInstance_st){ index, gi };
    return (nvmlGpuInstance_t){ &gi_handles[index][gi] };
}

static nvmlComputeInstance_t ci_handle(unsigned int index, unsigned int gi, unsigned int ci)
{
    ci_handles[index][gi][ci] = (struct nvmlComputeInstance_st){ index, gi, ci };
    return (nvmlComputeInstance_t){ &ci_handles[index][gi][ci] };
}

/* the GPU instance behind a handle and the state of its GPU; NULL with *ret set */
static const struct profile *gi_of(nvmlGpuInstance_t h, struct mig_gpu *m, nvmlReturn_t *ret)
{
    struct nvmlGpuInstance_st *g = h.handle;
    if (!initialized())
        *ret = NVML_ERROR_UNINITIALIZED;
    else if (!g || g < &gi_handles[0][0] || g >= &gi_handles[0][0] + MAX_GPUS * MAX_GIS)
        *ret = NVML_ERROR_INVALID_ARGUMENT;
    else {
        *m = state_of(g->index);
        if (m->current == NVML_DEVICE_MIG_ENABLE && m->gi[g->gi].used)
            return profile_by_id(m->gi[g->gi].profile_id);
        *ret = NVML_ERROR_INVALID_ARGUMENT; /* destroyed, or the GPU was reset */
    }
    return NULL;
}

/* ---- GPU instances ---- */
struct gi_create { unsigned int index; const struct profile *p; const unsigned int *want; unsigned int id; };

static nvmlReturn_t create_gi(struct mig_gpu *all, void *arg)
{
    struct gi_create *c = arg;
    struct mig_gpu *m = &all[c->index];
    unsigned int start;
    nvmlReturn_t ret;
    if (m->current != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    if ((ret = gi_fits(m, c->p, c->want, &start)) != NVML_SUCCESS)
        return ret;
    c->id = gi_id(start, c->p->size);
    m->gi[c->id] = (struct gi_state){ 1, c->p->id, start, c->p->size };
    memset(m->ci[c->id], 0, sizeof m->ci[c->id]);
    return NVML_SUCCESS;
}

static nvmlReturn_t create(nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
                           nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    struct gi_create c;
    if (i < 0)
        return ret;
    c = (struct gi_create){ (unsigned int)i, profile_by_id(profileId), placement ? &placement->start : NULL, 0 };
    if (!gpuInstance || !c.p || (placement && placement->size != c.p->size))
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&mock_lock);
    ret = mig_state_change(create_gi, &c);
    pthread_mutex_unlock(&mock_lock);
    if (ret == NVML_SUCCESS)
        *gpuInstance = gi_handle((unsigned int)i, c.id);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance)
{
    return create(device, profileId, NULL, gpuInstance);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                                  const nvmlGpuInstancePlacement_t *placement,
                                                                  nvmlGpuInstance_t *gpuInstance)
{
    if (!placement)
        return NVML_ERROR_INVALID_ARGUMENT;
    return create(device, profileId, placement, gpuInstance);
}

static nvmlReturn_t destroy_gi(struct mig_gpu *all, void *arg)
{
    struct nvmlGpuInstance_st *g = arg;
    struct mig_gpu *m = &all[g->index];
    unsigned int c;
    if (!m->gi[g->gi].used)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (c = 0; c < MAX_CIS; c++)
        if (m->ci[g->gi][c].used)
            return NVML_ERROR_IN_USE;      /* compute instances are active on it (nvml.h) */
    m->gi[g->gi].used = 0;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    if (!gi_of(gpuInstance, &m, &ret))
        return ret;
    pthread_mutex_lock(&mock_lock);
    ret = mig_state_change(destroy_gi, gpuInstance.handle);
    pthread_mutex_unlock(&mock_lock);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                   nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    struct mig_gpu m;
    unsigned int g, n = 0;
    if (i < 0)
        return ret;
    if (!count || !gpuInstances)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!profile_by_id(profileId))
        return NVML_ERROR_NOT_SUPPORTED;
    m = state_of((unsigned int)i);
    if (m.current != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    for (g = 0; g < MAX_GIS; g++)
        if (m.gi[g].used && m.gi[g].profile_id == profileId)
            gpuInstances[n++] = gi_handle((unsigned int)i, g);
    *count = n;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t ret;
    int i = gpu_index_of(device, &ret);
    struct mig_gpu m;
    if (i < 0)
        return ret;
    if (!gpuInstance || id >= MAX_GIS)
        return NVML_ERROR_INVALID_ARGUMENT;
    m = state_of((unsigned int)i);
    if (m.current != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!m.gi[id].used)
        return NVML_ERROR_NOT_FOUND;
    *gpuInstance = gi_handle((unsigned int)i, id);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    struct nvmlGpuInstance_st *g = gpuInstance.handle;
    if (!gi_of(gpuInstance, &m, &ret))
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    info->device.handle = &devices[g->index];
    info->id = g->gi;
    info->profileId = m.gi[g->gi].profile_id;
    info->placement = (nvmlGpuInstancePlacement_t){ m.gi[g->gi].start, m.gi[g->gi].size };
    return NVML_SUCCESS;
}

/* ---- compute instance profiles and instances ---- */
/* "MIG 3g.20gb" for a compute instance of the whole GPU instance, else "MIG 1c.3g.20gb" */
static void ci_name(char *out, size_t n, unsigned int c, const struct profile *p)
{
    if (c == p->slices)
        snprintf(out, n, "MIG %s", p->name);
    else
        snprintf(out, n, "MIG %uc.%s", c, p->name);
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                      unsigned int engProfile,
                                                                      nvmlComputeInstanceProfileInfo_t *info)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    const struct profile *p = gi_of(gpuInstance, &m, &ret);
    unsigned int c;
    if (!p)
        return ret;
    if (!info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT || engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    c = ci_slices[profile];
    if (!c || c > p->slices)
        return NVML_ERROR_NOT_SUPPORTED;   /* larger than its GPU instance */
    memset(info, 0, sizeof *info);
    info->id = profile;
    info->sliceCount = c;
    info->instanceCount = p->slices / c;
    info->multiprocessorCount = p->sm * c / p->slices;
    info->sharedCopyEngineCount = p->ce;
    info->sharedDecoderCount = p->dec;
    info->sharedEncoderCount = p->enc;
    info->sharedJpegCount = p->jpeg;
    info->sharedOfaCount = p->ofa;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                       unsigned int engProfile,
                                                                       nvmlComputeInstanceProfileInfo_v2_t *info)
{
    nvmlComputeInstanceProfileInfo_t v1;
    nvmlReturn_t ret;
    struct mig_gpu m;
    const struct profile *p;
    unsigned int version;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    version = info->version;
    if (version != nvmlComputeInstanceProfileInfo_v2 && version != nvmlComputeInstanceProfileInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((ret = nvmlGpuInstanceGetComputeInstanceProfileInfo(gpuInstance, profile, engProfile, &v1)) != NVML_SUCCESS)
        return ret;
    p = gi_of(gpuInstance, &m, &ret);
    if (!p)
        return ret;
    if (version == nvmlComputeInstanceProfileInfo_v3) {
        nvmlComputeInstanceProfileInfo_v3_t *v3 = (nvmlComputeInstanceProfileInfo_v3_t *)info;
        memset(v3, 0, sizeof *v3);
        *v3 = (nvmlComputeInstanceProfileInfo_v3_t){ version, v1.id, v1.sliceCount, v1.instanceCount,
            v1.multiprocessorCount, v1.sharedCopyEngineCount, v1.sharedDecoderCount, v1.sharedEncoderCount,
            v1.sharedJpegCount, v1.sharedOfaCount, "", 0 };
        ci_name(v3->name, sizeof v3->name, v1.sliceCount, p);
    } else {
        memset(info, 0, sizeof *info);
        *info = (nvmlComputeInstanceProfileInfo_v2_t){ version, v1.id, v1.sliceCount, v1.instanceCount,
            v1.multiprocessorCount, v1.sharedCopyEngineCount, v1.sharedDecoderCount, v1.sharedEncoderCount,
            v1.sharedJpegCount, v1.sharedOfaCount, "" };
        ci_name(info->name, sizeof info->name, v1.sliceCount, p);
    }
    return NVML_SUCCESS;
}

struct ci_create { unsigned int index, gi, profile, id; const unsigned int *want; };

static nvmlReturn_t create_ci(struct mig_gpu *all, void *arg)
{
    struct ci_create *c = arg;
    struct mig_gpu *m = &all[c->index];
    const struct profile *p = profile_by_id(m->gi[c->gi].profile_id);
    unsigned int size = ci_slices[c->profile], used = 0, same = 0, k, start, id;
    if (!m->gi[c->gi].used || !p)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (k = 0; k < MAX_CIS; k++)
        if (m->ci[c->gi][k].used) {
            used += m->ci[c->gi][k].size;
            same += m->ci[c->gi][k].profile_id == c->profile;
        }
    if (used + size > p->slices || same >= p->slices / size)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    for (start = 0; start + size <= p->slices; start += size) {
        int free = 1;
        if (c->want && *c->want != start)
            continue;
        for (k = 0; k < MAX_CIS; k++)
            if (m->ci[c->gi][k].used && start < m->ci[c->gi][k].start + m->ci[c->gi][k].size
                && m->ci[c->gi][k].start < start + size)
                free = 0;
        if (!free)
            continue;
        for (id = 0; id < MAX_CIS && m->ci[c->gi][id].used; id++)
            ;
        if (id == MAX_CIS)
            break;
        m->ci[c->gi][id] = (struct ci_state){ 1, c->profile, start, size };
        c->id = id;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
}

static nvmlReturn_t create_compute(nvmlGpuInstance_t gpuInstance, unsigned int profileId, const unsigned int *start,
                                   nvmlComputeInstance_t *computeInstance)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    struct nvmlGpuInstance_st *g = gpuInstance.handle;
    const struct profile *p = gi_of(gpuInstance, &m, &ret);
    struct ci_create c;
    if (!p)
        return ret;
    if (!computeInstance || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!ci_slices[profileId] || ci_slices[profileId] > p->slices)
        return NVML_ERROR_NOT_SUPPORTED;
    c = (struct ci_create){ g->index, g->gi, profileId, 0, start };
    pthread_mutex_lock(&mock_lock);
    ret = mig_state_change(create_ci, &c);
    pthread_mutex_unlock(&mock_lock);
    if (ret == NVML_SUCCESS)
        *computeInstance = ci_handle(g->index, g->gi, c.id);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                              nvmlComputeInstance_t *computeInstance)
{
    return create_compute(gpuInstance, profileId, NULL, computeInstance);
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                           const nvmlComputeInstancePlacement_t *placement,
                                                                           nvmlComputeInstance_t *computeInstance)
{
    if (!placement || placement->size != (profileId < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? ci_slices[profileId] : 0))
        return NVML_ERROR_INVALID_ARGUMENT;
    return create_compute(gpuInstance, profileId, &placement->start, computeInstance);
}

/* the compute instance behind a handle; 0 with *ret set */
static int ci_of(nvmlComputeInstance_t h, struct mig_gpu *m, nvmlReturn_t *ret)
{
    struct nvmlComputeInstance_st *c = h.handle;
    if (!initialized()) {
        *ret = NVML_ERROR_UNINITIALIZED;
        return 0;
    }
    if (!c || c < &ci_handles[0][0][0] || c >= &ci_handles[0][0][0] + MAX_GPUS * MAX_GIS * MAX_CIS) {
        *ret = NVML_ERROR_INVALID_ARGUMENT;
        return 0;
    }
    *m = state_of(c->index);
    if (m->current != NVML_DEVICE_MIG_ENABLE || !m->gi[c->gi].used || !m->ci[c->gi][c->ci].used) {
        *ret = NVML_ERROR_INVALID_ARGUMENT;
        return 0;
    }
    return 1;
}

static nvmlReturn_t destroy_ci(struct mig_gpu *all, void *arg)
{
    struct nvmlComputeInstance_st *c = arg;
    if (!all[c->index].ci[c->gi][c->ci].used)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_held(c->index, c->gi, c->ci))
        return NVML_ERROR_IN_USE;          /* "In use by another client" */
    all[c->index].ci[c->gi][c->ci].used = 0;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    if (!ci_of(computeInstance, &m, &ret))
        return ret;
    pthread_mutex_lock(&mock_lock);
    ret = mig_state_change(destroy_ci, computeInstance.handle);
    pthread_mutex_unlock(&mock_lock);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                            nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    struct nvmlGpuInstance_st *g = gpuInstance.handle;
    unsigned int c, n = 0;
    if (!gi_of(gpuInstance, &m, &ret))
        return ret;
    if (!computeInstances || !count || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (c = 0; c < MAX_CIS; c++)
        if (m.ci[g->gi][c].used && m.ci[g->gi][c].profile_id == profileId)
            computeInstances[n++] = ci_handle(g->index, g->gi, c);
    *count = n;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                               nvmlComputeInstance_t *computeInstance)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    struct nvmlGpuInstance_st *g = gpuInstance.handle;
    if (!gi_of(gpuInstance, &m, &ret))
        return ret;
    if (!computeInstance || id >= MAX_CIS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!m.ci[g->gi][id].used)
        return NVML_ERROR_NOT_FOUND;
    *computeInstance = ci_handle(g->index, g->gi, id);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    struct mig_gpu m;
    nvmlReturn_t ret;
    struct nvmlComputeInstance_st *c = computeInstance.handle;
    if (!ci_of(computeInstance, &m, &ret))
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    info->device.handle = &devices[c->index];
    info->gpuInstance = gi_handle(c->index, c->gi);
    info->id = c->ci;
    info->profileId = m.ci[c->gi][c->ci].profile_id;
    info->placement = (nvmlComputeInstancePlacement_t){ m.ci[c->gi][c->ci].start, m.ci[c->gi][c->ci].size };
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    return nvmlComputeInstanceGetInfo_v2(computeInstance, info);
}
