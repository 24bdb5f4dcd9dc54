#ifndef SEAM_CJSONC_SHIM_H
#define SEAM_CJSONC_SHIM_H
#include <json-c/json.h>
#endif
