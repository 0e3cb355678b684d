// core/ including a plan/ header: forbidden (core is the bottom of the graph)
#include "kvplan/plan/scenario.h"
