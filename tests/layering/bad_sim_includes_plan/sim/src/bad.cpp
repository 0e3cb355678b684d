// sim/ including a plan/ header: forbidden (plan stands on sim, not the other way)
#include "kvplan/plan/settings.h"
