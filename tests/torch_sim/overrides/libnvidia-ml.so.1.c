/* Stand-in libnvidia-ml.so.1 (test infrastructure): the NVML entry points
 * c10 opens for expandable segments. Init and the device handle succeed;
 * NVLink and fabric queries are not supported on the simulated device; no
 * process runs on it. */
#include <stdio.h>
#include <string.h>
#define EXPORT __attribute__((visibility("default")))
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
static char device_token[16][8];
EXPORT int nvmlInit_v2(void) { return NVML_SUCCESS; }
EXPORT int nvmlInit(void) { return NVML_SUCCESS; }
EXPORT int nvmlShutdown(void) { return NVML_SUCCESS; }
EXPORT const char *nvmlErrorString(int r) { return r ? "NVML stand-in: not supported" : "Success"; }
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **device)
{
    unsigned dom = 0, b = 0;
    if (!bus || !device || sscanf(bus, "%x:%x", &dom, &b) != 2 || b < 1 || b > 16) return NVML_ERROR_INVALID_ARGUMENT;
    *device = device_token[b - 1];
    return NVML_SUCCESS;
}
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **device)
{
    if (!device || i >= 16) return NVML_ERROR_INVALID_ARGUMENT;
    *device = device_token[i];
    return NVML_SUCCESS;
}
EXPORT int nvmlDeviceGetNvLinkRemoteDeviceType(void *d, unsigned link, int *t) { (void)d, (void)link, (void)t; return NVML_ERROR_NOT_SUPPORTED; }
EXPORT int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *d, unsigned link, void *pci) { (void)d, (void)link, (void)pci; return NVML_ERROR_NOT_SUPPORTED; }
EXPORT int nvmlDeviceGetComputeRunningProcesses(void *d, unsigned *count, void *infos)
{
    (void)d, (void)infos;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}
EXPORT int nvmlSystemGetCudaDriverVersion_v2(int *v) { if (!v) return NVML_ERROR_INVALID_ARGUMENT; *v = 13000; return NVML_SUCCESS; }
/* nvmlGpuFabricInfoV_t: version, clusterUuid[16], status, cliqueId, state,
 * healthMask. An sm_90 device outside any NVLink fabric: state "not
 * supported", the call itself succeeds. */
EXPORT int nvmlDeviceGetGpuFabricInfoV(void *d, void *info)
{
    (void)d;
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned char *p = info;
    memset(p + 4, 0, 32);
    int status = NVML_ERROR_NOT_SUPPORTED;
    memcpy(p + 20, &status, sizeof status);
    return NVML_SUCCESS;
}
