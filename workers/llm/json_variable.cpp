// The cursor's tree of a JSON variable, and the parser behind it for what the cursor leaves.
#include "workers/llm/json_variable.hpp"

#include <cstdint>
#include <new>

#include "schema/json_cursor.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::llm {

using nlohmann::json;

namespace {

// Builds the value at the cursor into `out`; false for anything it leaves to the parser.
// Recursion is bounded by `depth` (schema::kMaxJsonSkipDepth levels), never by the text.
class TreeBuilder {
public:
    explicit TreeBuilder(std::string_view text) : cursor_(text), end_(text.data() + text.size()) {}

    bool whole(json& out) { return value(out, 0) && cursor_.at_end(); }

private:
    bool value(json& out, int depth) {
        cursor_.ws();
        if (cursor_.position() == end_ || depth > schema::kMaxJsonSkipDepth) return false;
        switch (*cursor_.position()) {
            case '"':
                return string(out);
            case '{':
                return object(out, depth);
            case '[':
                return array(out, depth);
            case 't':
            case 'f': {
                bool b = false;
                if (!cursor_.boolean(b)) return false;
                out = b;
                return true;
            }
            case 'n':
                out = nullptr;
                return cursor_.skip();  // at an 'n', only the literal null
            default: {
                // A non-negative integer is number_unsigned in the parser's tree too; any other
                // number (a sign, a fraction, an exponent, too many digits) is left to it.
                std::uint64_t n = 0;
                if (!cursor_.uint(n)) return false;
                out = n;
                return true;
            }
        }
    }

    bool string(json& out) {
        schema::JsonText text;
        if (!cursor_.raw_string(text)) return false;
        if (text.escaped) {
            std::string value;
            schema::append_unescaped(value, text.raw);
            out = std::move(value);
        } else {
            out = std::string(text.raw);
        }
        return true;
    }

    bool object(json& out, int depth) {
        out = json::object();
        auto& members = out.get_ref<json::object_t&>();
        return cursor_.object([&](std::string_view key) {
            // A repeated key: the parser keeps the last value; it decides.
            const auto [it, added] = members.try_emplace(std::string(key));
            return added && value(it->second, depth + 1);
        });
    }

    bool array(json& out, int depth) {
        out = json::array();
        auto& items = out.get_ref<json::array_t&>();
        return cursor_.array([&] { return value(items.emplace_back(), depth + 1); });
    }

    schema::JsonCursor cursor_;
    const char* end_;
};

}  // namespace

base::Result<json> parse_json_variable(std::string_view text) {
    try {
        json tree;
        if (TreeBuilder(text).whole(tree)) return tree;
    } catch (const std::bad_alloc&) {
        // As the parser's own failure to allocate: its error below.
    }
    return schema::parse_untrusted_json(text);
}

}  // namespace glassbox::llm
