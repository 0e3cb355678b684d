// a gui/ header
#pragma once
