// Lets one header of routing arithmetic compile for the host and the device.
#pragma once

#if defined(__CUDACC__)
#define MS_HOST_DEVICE __host__ __device__
#else
#define MS_HOST_DEVICE
#endif
