#ifndef LLMSPOOL_CYAML_SHIM_H
#define LLMSPOOL_CYAML_SHIM_H
#include <yaml.h>
#endif
