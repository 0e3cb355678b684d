// a cli/ header
#pragma once
