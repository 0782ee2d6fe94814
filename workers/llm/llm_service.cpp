#include "workers/llm/llm_service.hpp"
