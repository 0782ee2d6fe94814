// The tree of a JSON variable: the schema's one-pass reader (schema/json_fast.hpp), which hands
// what it leaves to nlohmann's parser.
#include "workers/llm/json_variable.hpp"

#include "schema/json_fast.hpp"

namespace glassbox::llm {

base::Result<nlohmann::json> parse_json_variable(std::string_view text) {
    return schema::parse_json_tree(text);
}

}  // namespace glassbox::llm
