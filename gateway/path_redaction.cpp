// Server paths kept from clients: roots found in texts and replaced whole.
#include "gateway/path_redaction.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <nlohmann/json.hpp>

namespace glassbox::gateway {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '~';
}

// What ends a path inside a message: "x.db: no such file", "(…/x.ttl)", "'…'", "<…>".
bool ends_path(char c) {
    return static_cast<unsigned char>(c) <= 0x20 || c == '"' || c == '\'' || c == '`' || c == ':' ||
           c == ',' || c == ';' || c == ')' || c == ']' || c == '}' || c == '>' || c == '<' ||
           c == '|';
}

// A root as a file: URI writes it (RFC 8089: every byte but unreserved ones and '/' escaped).
std::string percent_encoded(std::string_view path) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : path) {
        if (name_char(c) || c == '/') {
            out += c;
        } else {
            out += '%';
            out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
            out += kHex[static_cast<unsigned char>(c) & 0xf];
        }
    }
    return out;
}

// The start of "scheme://" right before `at` (file:///home/…, ipc:///home/…), else `at`.
std::size_t scheme_start(std::string_view text, std::size_t at) {
    if (at < 3 || text.substr(at - 3, 3) != "://") return at;
    std::size_t start = at - 3;
    while (start > 0) {
        const char c = text[start - 1];
        const bool scheme = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
        if (!scheme) break;
        --start;
    }
    return start < at - 3 ? start : at;
}

}  // namespace

PathRedactor::PathRedactor(const std::vector<std::string>& roots) {
    for (const auto& root : roots) add_root(root);
}

void PathRedactor::add_root(const std::string& given, bool name_prefix) {
    std::string root = given;
    if (!name_prefix)
        while (root.size() > 1 && root.back() == '/') root.pop_back();
    // "/" would redact every path, a relative one paths that are not the server's.
    if (root.size() < 2 || root.front() != '/') return;
    for (std::string text : {root, percent_encoded(root)}) {
        const bool known = std::any_of(roots_.begin(), roots_.end(), [&](const Root& r) {
            return r.text == text && r.name_prefix == name_prefix;
        });
        if (!known) roots_.push_back(Root{std::move(text), name_prefix});
    }
    std::stable_sort(roots_.begin(), roots_.end(),
                     [](const Root& a, const Root& b) { return a.text.size() > b.text.size(); });
}

bool PathRedactor::path_at(std::string_view text, std::size_t at, const Root& root,
                           std::size_t& from, std::size_t& to) const {
    // A root inside a longer name is not that root: "/srv/gb" is not in "/srv/gbx" nor "/a/srv/gb".
    if (at > 0 && name_char(text[at - 1])) return false;
    std::size_t end = at + root.text.size();
    if (!root.name_prefix && end < text.size() && text[end] != '/' && !ends_path(text[end]))
        return false;
    while (end < text.size() && !ends_path(text[end])) ++end;
    from = scheme_start(text, at);
    to = end;
    return true;
}

bool PathRedactor::clean(std::string_view text) const {
    for (const auto& root : roots_) {
        for (auto at = text.find(root.text); at != std::string_view::npos;
             at = text.find(root.text, at + 1)) {
            std::size_t from = 0;
            std::size_t to = 0;
            if (path_at(text, at, root, from, to)) return false;
        }
    }
    return true;
}

std::string PathRedactor::redact(std::string_view given) const {
    std::string text(given);
    for (const auto& root : roots_) {
        for (auto at = text.find(root.text); at != std::string::npos;
             at = text.find(root.text, at)) {
            std::size_t from = 0;
            std::size_t to = 0;
            if (!path_at(text, at, root, from, to)) {
                ++at;
                continue;
            }
            text.replace(from, to - from, kRedactedPath);
            at = from + kRedactedPath.size();
        }
    }
    return text;
}

void PathRedactor::redact_json(json& value) const {
    if (value.is_string()) {
        auto& text = value.get_ref<std::string&>();
        if (!clean(text)) text = redact(text);
    } else if (value.is_object()) {
        const auto kind = value.find("t");
        const bool iri_term = kind != value.end() && kind->is_string() && *kind == "i";
        for (auto& [key, member] : value.items())
            if (!(iri_term && key == "i")) redact_json(member);
    } else if (value.is_array()) {
        for (auto& item : value) redact_json(item);
    }
}

ServerPaths::ServerPaths() {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (!ec) add(cwd);
    for (const char* variable : {"HOME", "GLASSBOX_HOME"}) {
        const char* value = std::getenv(variable);
        if (value != nullptr && *value != '\0') add(value);
    }
    add(upload_folder_prefix(), true);
}

ServerPaths& ServerPaths::instance() {
    static ServerPaths paths;
    return paths;
}

void ServerPaths::add(const fs::path& root, bool name_prefix) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(root, ec);
    if (ec || root.empty()) return;
    std::unique_lock lock(mutex_);
    redactor_.add_root(absolute.lexically_normal().string(), name_prefix);
    // The same folder through its symbolic links resolved, as a worker may name it.
    const fs::path real = fs::weakly_canonical(absolute, ec);
    if (!ec) redactor_.add_root(real.string(), name_prefix);
}

bool ServerPaths::clean(std::string_view text) const {
    std::shared_lock lock(mutex_);
    return redactor_.clean(text);
}

std::string ServerPaths::redact(std::string_view text) const {
    std::shared_lock lock(mutex_);
    return redactor_.clean(text) ? std::string(text) : redactor_.redact(text);
}

void ServerPaths::redact_json(json& value) const {
    std::shared_lock lock(mutex_);
    redactor_.redact_json(value);
}

PathRedactor ServerPaths::snapshot() const {
    std::shared_lock lock(mutex_);
    return redactor_;
}

fs::path upload_folder_prefix() {
    std::error_code ec;
    fs::path temp = fs::temp_directory_path(ec);
    if (ec) temp = "/tmp";
    return temp / "glassbox-upload-";
}

}  // namespace glassbox::gateway
