#include "workers/rag/graph_rag_service.hpp"
