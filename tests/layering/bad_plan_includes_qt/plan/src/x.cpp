// plan/ using Qt: forbidden
#include <QString>
