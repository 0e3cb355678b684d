// gui/ including a cli/ header by its bare name: forbidden
#include "commands.h"
