/*
 * nvidia_smi.c - the lab's small nvidia-smi READER of the mock NVML library (not NVIDIA's
 * nvidia-smi). Built static, with the mock compiled in, so it runs in an image that has no C
 * library (the stand-in image is built from busybox). It reads what is injected into the
 * container: it looks for libnvidia-ml.so.1 where the dynamic loader would (LD_PRELOAD, LD_LIBRARY_PATH,
 * then /usr/lib/x86_64-linux-gnu, /usr/lib64, /lib/x86_64-linux-gnu, /lib64, /usr/lib, /lib),
 * checks that the file found is the lab's mock and answers from the configuration beside it
 * (nvml-mock.conf; $NVML_MOCK_CONFIG wins), exactly as the library would.
 *
 *   nvidia-smi                 the default table (name, bus, memory lines as driver 550 prints)
 *   nvidia-smi -L              GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-xxxxxxxx-...)
 *   nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv[,noheader][,nounits]
 *              (also memory.used/free, pci.bus_id, pci.device_id, serial, compute_cap, mig.mode.current/pending)
 *   MIG (smi_mig.c): -L lists MIG devices; -mig 0|1; -r; mig -lgi, -lgip, -lgipp; -i IDS
 *   nvidia-smi --version       the four lines driver 550 prints (NVIDIA-SMI, NVML, DRIVER, CUDA
 *                              versions) - what the DRA driver's kubelet-plugin-prestart.sh runs
 *
 * Failing as the real one does (texts and exit codes as NVIDIA's nvidia-smi prints them in
 * public reports - NVIDIA/nvidia-docker#1163, intel/llvm#17614 - and nvidia-smi(1) RETURN VALUE):
 *   no library              "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. ..." exit 12
 *   driver not loaded       "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ..." exit 9
 *   version mismatch        "Failed to initialize NVML: Driver/library version mismatch"
 *                           "NVML library version: 550.127"                          exit 18
 *   a lost GPU              "Unable to determine the device handle for GPU0000:07:00.0: GPU is lost. ..." exit 15
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvml.h"
#include "smi.h"

extern const char nvml_mock_identity[];
void nvml_mock_set_libdir(const char *dir);
void nvml_mock_set_library(const char *path);
const char *nvml_mock_library_version(void);
const char *nvml_mock_bus_id(unsigned int index);

static const char *NO_LIBRARY =
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA "
    "Display Driver is properly installed and present in your system.\n"
    "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n";
static const char *NO_DRIVER =
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
    "latest NVIDIA driver is installed and running.\n";

/* the folder holding libnvidia-ml.so.1, as the loader would search; 0 when none */
static int find_library(char *dir, size_t n, char *path, size_t pn)
{
    static const char *standard[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu",
                                      "/lib64", "/usr/lib", "/lib", NULL };
    const char *env = getenv("LD_LIBRARY_PATH"), *preload = getenv("LD_PRELOAD"), *slash;
    char list[4096], *tok, *save = NULL;
    int i;
    /* a library the loader preloaded is the one NVIDIA's nvidia-smi gets when it opens
       libnvidia-ml.so.1 (the soname is loaded already): the DRA driver's prestart script runs
       `env -i LD_PRELOAD=/driver-root/.../libnvidia-ml.so.1 nvidia-smi --version` */
    snprintf(list, sizeof list, "%s", preload ? preload : "");
    for (tok = strtok_r(list, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
        slash = strrchr(tok, '/');
        if (!slash || strncmp(slash + 1, "libnvidia-ml.so", 15) || access(tok, R_OK) != 0)
            continue;
        snprintf(path, pn, "%s", tok);
        snprintf(dir, n, "%.*s", (int)(slash - tok), tok);
        return 1;
    }
    save = NULL;
    snprintf(list, sizeof list, "%s", env ? env : "");
    for (tok = strtok_r(list, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        snprintf(path, pn, "%s/libnvidia-ml.so.1", tok);
        if (access(path, R_OK) == 0) {
            snprintf(dir, n, "%s", tok);
            return 1;
        }
    }
    for (i = 0; standard[i]; i++) {
        snprintf(path, pn, "%s/libnvidia-ml.so.1", standard[i]);
        if (access(path, R_OK) == 0) {
            snprintf(dir, n, "%s", standard[i]);
            return 1;
        }
    }
    return 0;
}

static int is_mock(const char *path)
{
    FILE *f = fopen(path, "rb");
    static char buf[1 << 16];
    size_t len = strlen(nvml_mock_identity), got, keep = 0;
    int found = 0;
    if (!f)
        return 0;
    while (!found && (got = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
        got += keep;
        found = memmem(buf, got, nvml_mock_identity, len) != NULL;
        keep = got < len ? got : len;
        memmove(buf, buf + got - keep, keep);
    }
    fclose(f);
    return found;
}

static void major_minor(const char *version, char *out, size_t n)
{
    const char *dot = strchr(version, '.');
    dot = dot ? strchr(dot + 1, '.') : NULL;
    snprintf(out, n, "%.*s", dot ? (int)(dot - version) : (int)strlen(version), version);
}

/* a handle, or NULL after printing the real nvidia-smi's line for a GPU it cannot reach */
static int handle(unsigned int i, nvmlDevice_t *d)
{
    nvmlReturn_t ret = nvmlDeviceGetHandleByIndex_v2(i, d);
    if (ret == NVML_SUCCESS)
        return 1;
    if (ret == NVML_ERROR_GPU_IS_LOST)
        printf("Unable to determine the device handle for GPU%s: GPU is lost.  Reboot the system to recover this GPU\n",
               nvml_mock_bus_id(i) + 4);
    else
        printf("Unable to determine the device handle for GPU%s: %s\n", nvml_mock_bus_id(i) + 4, nvmlErrorString(ret));
    return 0;
}

static int list_gpus(unsigned int count, const char *ids)
{
    unsigned int i;
    int rc = 0;
    for (i = 0; i < count; i++) {
        nvmlDevice_t d;
        char name[96], uuid[96];
        if (!smi_selected(ids, i))
            continue;
        if (!handle(i, &d)) {
            rc = 15;
            continue;
        }
        nvmlDeviceGetName(d, name, sizeof name);
        nvmlDeviceGetUUID(d, uuid, sizeof uuid);
        printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
        smi_list_mig(d);
    }
    return rc;
}

static int query(unsigned int count, const char *fields, const char *format)
{
    static const char *known[] = { "index", "name", "uuid", "driver_version", "memory.total", "memory.used",
                                   "memory.free", "pci.bus_id", "pci.device_id", "serial", "compute_cap",
                                   "mig.mode.current", "mig.mode.pending", NULL };
    char list[1024], *names[16], *tok, *save = NULL, driver[32];
    int n = 0, k, noheader = strstr(format, "noheader") != NULL, nounits = strstr(format, "nounits") != NULL;
    unsigned int i;
    int rc = 0;
    if (strncmp(format, "csv", 3) != 0) {
        printf("\"%s\" is not a valid format.\n", format);
        return 2;
    }
    snprintf(list, sizeof list, "%s", fields);
    for (tok = strtok_r(list, ",", &save); tok && n < 16; tok = strtok_r(NULL, ",", &save)) {
        for (k = 0; known[k] && strcmp(known[k], tok); k++)
            ;
        if (!known[k]) {
            printf("Field \"%s\" is not a valid field to query.\n\n", tok);
            return 2;
        }
        names[n++] = tok;
    }
    if (!noheader)
        for (k = 0; k < n; k++)
            printf("%s%s%s", names[k], !nounits && !strncmp(names[k], "memory.", 7) ? " [MiB]" : "",
                   k + 1 < n ? ", " : "\n");
    nvmlSystemGetDriverVersion(driver, sizeof driver);
    for (i = 0; i < count; i++) {
        nvmlDevice_t d;
        char name[96], uuid[96], serial[32];
        nvmlMemory_t mem;
        nvmlPciInfo_t pci;
        int major = 0, minor = 0;
        if (!handle(i, &d)) {
            rc = 15;
            continue;
        }
        nvmlDeviceGetName(d, name, sizeof name);
        nvmlDeviceGetUUID(d, uuid, sizeof uuid);
        nvmlDeviceGetSerial(d, serial, sizeof serial);
        nvmlDeviceGetMemoryInfo(d, &mem);
        nvmlDeviceGetPciInfo_v3(d, &pci);
        nvmlDeviceGetCudaComputeCapability(d, &major, &minor);
        for (k = 0; k < n; k++) {
            const char *f = names[k], *unit = nounits ? "" : " MiB";
            if (!strcmp(f, "index")) printf("%u", i);
            else if (!strcmp(f, "name")) printf("%s", name);
            else if (!strcmp(f, "uuid")) printf("%s", uuid);
            else if (!strcmp(f, "driver_version")) printf("%s", driver);
            else if (!strcmp(f, "memory.total")) printf("%llu%s", mem.total >> 20, unit);
            else if (!strcmp(f, "memory.used")) printf("%llu%s", mem.used >> 20, unit);
            else if (!strcmp(f, "memory.free")) printf("%llu%s", mem.free >> 20, unit);
            else if (!strcmp(f, "pci.bus_id")) printf("%s", pci.busId);
            else if (!strcmp(f, "pci.device_id")) printf("0x%08X", pci.pciDeviceId);
            else if (!strcmp(f, "serial")) printf("%s", serial);
            else if (!strcmp(f, "compute_cap")) printf("%d.%d", major, minor);
            else if (!strncmp(f, "mig.mode.", 9)) { /* "Enabled" | "Disabled" | "[N/A]", as nvidia-smi */
                unsigned int current, pending;
                if (nvmlDeviceGetMigMode(d, &current, &pending) != NVML_SUCCESS) printf("[N/A]");
                else printf("%s", (!strcmp(f, "mig.mode.current") ? current : pending) ? "Enabled" : "Disabled");
            }
            printf("%s", k + 1 < n ? ", " : "\n");
        }
    }
    return rc;
}

/* the MIG M. cell: "Enabled", "Disabled", or a pending change as driver 550 prints it ("Disabled*") */
static const char *mig_mode(nvmlDevice_t d)
{
    unsigned int current, pending;
    if (nvmlDeviceGetMigMode(d, &current, &pending) != NVML_SUCCESS)
        return "N/A";
    if (current != pending)
        return current == NVML_DEVICE_MIG_ENABLE ? "Enabled*" : "Disabled*";
    return current == NVML_DEVICE_MIG_ENABLE ? "Enabled" : "Disabled";
}

/* `nvidia-smi --version` as driver 550 prints it (NVIDIA-SMI and DRIVER: the driver's version,
   NVML: its major.minor, CUDA: the driver's CUDA version) */
static int versions(void)
{
    char driver[32], nvml[32], cuda[16];
    int cuda_version = 0;
    nvmlSystemGetDriverVersion(driver, sizeof driver);
    nvmlSystemGetCudaDriverVersion_v2(&cuda_version);
    major_minor(driver, nvml, sizeof nvml);
    snprintf(cuda, sizeof cuda, "%d.%d", cuda_version / 1000, (cuda_version % 1000) / 10);
    printf("NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n",
           driver, nvml, driver, cuda);
    return 0;
}

/* driver 550's default table; what the mock does not model (fan, temperature, power) is N/A */
static int table(unsigned int count)
{
    char driver[32], stamp[64], cuda[16], line[256];
    int cuda_version = 0, rc = 0;
    unsigned int i;
    time_t now = time(NULL);
    const char *rule = "+-----------------------------------------+------------------------+----------------------+";
    nvmlSystemGetDriverVersion(driver, sizeof driver);
    nvmlSystemGetCudaDriverVersion_v2(&cuda_version);
    snprintf(cuda, sizeof cuda, "%d.%d", cuda_version / 1000, (cuda_version % 1000) / 10);
    strftime(stamp, sizeof stamp, "%a %b %e %H:%M:%S %Y", localtime(&now));
    printf("%s       \n", stamp);
    printf("+-----------------------------------------------------------------------------------------+\n");
    snprintf(line, sizeof line, "| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %s", driver, driver, cuda);
    printf("%-90.90s|\n", line);
    printf("|-----------------------------------------+------------------------+----------------------+\n");
    printf("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n");
    printf("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n");
    printf("|                                         |                        |               MIG M. |\n");
    printf("|=========================================+========================+======================|\n");
    for (i = 0; i < count; i++) {
        nvmlDevice_t d;
        char name[96];
        nvmlMemory_t mem;
        nvmlPciInfo_t pci;
        if (!handle(i, &d)) {
            rc = 15;
            continue;
        }
        nvmlDeviceGetName(d, name, sizeof name);
        nvmlDeviceGetMemoryInfo(d, &mem);
        nvmlDeviceGetPciInfo_v3(d, &pci);
        printf("| %3u  %-31.31sOn  | %18s Off | %20s |\n", i, name, pci.busId, "0");
        printf("| N/A   N/A    P0              N/A /  N/A |%8lluMiB / %6lluMiB |%7s%%%13s |\n",
               mem.used >> 20, mem.total >> 20, "0", "Default");
        printf("|                                         |                        | %20s |\n", mig_mode(d));
        printf("%s\n", rule);
    }
    printf("                                                                                         \n");
    printf("+-----------------------------------------------------------------------------------------+\n");
    printf("| Processes:                                                                              |\n");
    printf("|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n");
    printf("|        ID   ID                                                               Usage      |\n");
    printf("|=========================================================================================|\n");
    printf("|  No running processes found                                                             |\n");
    printf("+-----------------------------------------------------------------------------------------+\n");
    return rc;
}

int main(int argc, char **argv)
{
    char dir[4096], path[4200], version[32];
    const char *fields = NULL, *format = "csv", *ids = NULL, *mig_mode = NULL, *mig_list = NULL;
    int list = 0, reset = 0, mig = 0, show_version = 0, i;
    unsigned int count = 0;
    nvmlReturn_t ret;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-L") || !strcmp(argv[i], "--list-gpus"))
            list = 1;
        else if (!strncmp(argv[i], "--query-gpu=", 12))
            fields = argv[i] + 12;
        else if (!strncmp(argv[i], "--format=", 9))
            format = argv[i] + 9;
        else if ((!strcmp(argv[i], "-i") || !strcmp(argv[i], "--id")) && i + 1 < argc)
            ids = argv[++i];
        else if (!strncmp(argv[i], "--id=", 5))
            ids = argv[i] + 5;
        else if (!strcmp(argv[i], "--version") && argc == 2)
            show_version = 1;
        else if (!strcmp(argv[i], "-r") || !strcmp(argv[i], "--gpu-reset"))
            reset = 1;
        else if (!strcmp(argv[i], "-mig") && i + 1 < argc && (!strcmp(argv[i + 1], "0") || !strcmp(argv[i + 1], "1")))
            mig_mode = argv[++i];
        else if (!strcmp(argv[i], "mig") && i == 1)
            mig = 1;
        else if (mig && (!strcmp(argv[i], "-lgi") || !strcmp(argv[i], "-lgip") || !strcmp(argv[i], "-lgipp")
                         || !strcmp(argv[i], "-lci")))
            mig_list = argv[i];
        else {
            printf("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
                   "(this is the lab's nvidia-smi reader of its mock NVML library: it knows -L, "
                   "--query-gpu=... --format=csv[,noheader][,nounits], -i, -r, -mig 0|1, "
                   "mig -lgi|-lgip|-lgipp|-lci, --version and no option)\n");
            return 2;
        }
    }
    if (mig && !mig_list) {
        printf("Invalid combination of input arguments. Please run 'nvidia-smi mig -h' for help.\n");
        return 2;
    }
    if (!find_library(dir, sizeof dir, path, sizeof path)) {
        fputs(NO_LIBRARY, stdout);
        return 12;
    }
    if (!is_mock(path)) {
        printf("%s is not the lab's mock NVML library: this nvidia-smi is the lab's reader of the mock "
               "and reads nothing else\n", path);
        return 12;
    }
    nvml_mock_set_libdir(dir);
    nvml_mock_set_library(path);
    ret = nvmlInit_v2();
    switch (ret) {
    case NVML_SUCCESS:
        break;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        major_minor(nvml_mock_library_version(), version, sizeof version);
        printf("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: %s\n", version);
        return 18;
    case NVML_ERROR_DRIVER_NOT_LOADED:
        fputs(NO_DRIVER, stdout);
        return 9;
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        fputs(NO_LIBRARY, stdout);
        return 12;
    default:
        printf("Failed to initialize NVML: %s\n", nvmlErrorString(ret));
        return 255;
    }
    if (show_version)
        return versions();
    nvmlDeviceGetCount_v2(&count);
    if (mig)
        return smi_mig(count, ids, mig_list);
    if (mig_mode)
        return smi_set_mig_mode(count, ids, mig_mode);
    if (reset)
        return smi_reset(count, ids);
    if (list)
        return list_gpus(count, ids);
    if (fields)
        return query(count, fields, format);
    return table(count);
}
