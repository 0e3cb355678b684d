// cli/ including a gui/ header: forbidden
#include "kvplan/gui/report_pdf.h"
