// Server paths kept from clients: the last guard before error texts, trace rows and stored
// error messages leave the gateway (docs/http.md §1, "No server paths").
#pragma once

#include <filesystem>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::gateway {

// What a redacted path reads as.
inline constexpr std::string_view kRedactedPath = "<server path>";

// Replaces every path under one of its roots (a directory, or a prefix of file names such as
// the upload folder's "/tmp/glassbox-upload-") with kRedactedPath: the whole path, from its
// first slash (or the URI scheme before it: `file://`, `ipc://`) to the first character that
// ends a path in a message (white space, a quote, a colon, a comma, …). A root's percent-encoded
// form (a file: URI) is found as well. Relative roots and "/" are ignored: they would redact
// everything or nothing.
class PathRedactor {
public:
    PathRedactor() = default;
    explicit PathRedactor(const std::vector<std::string>& roots);

    // A directory (`/home/ops/.glassbox`: itself and everything under it), or with
    // `name_prefix` the start of names (`/tmp/glassbox-upload-`: every path beginning so).
    void add_root(const std::string& root, bool name_prefix = false);
    // Nothing to redact: `text` holds no root.
    bool clean(std::string_view text) const;
    std::string redact(std::string_view text) const;
    // Every string in `value`, recursively, but the IRIs of compact terms (`{"t": "i", "i": …}`):
    // an IRI is the identity of a document or a step, kept as stored (docs/http.md §1).
    void redact_json(nlohmann::json& value) const;

private:
    struct Root {
        std::string text;  // without a trailing slash
        bool name_prefix = false;
    };
    // Where `root` occurs at `at` as a path of its own, the span of that whole path.
    bool path_at(std::string_view text, std::size_t at, const Root& root, std::size_t& from,
                 std::size_t& to) const;

    std::vector<Root> roots_;  // longest first, so a root inside another is replaced with it
};

// The gateway process's roots: its working directory, $HOME, $GLASSBOX_HOME and the folder its
// uploads are staged in, and every path add_server_path() was given (the home the gateway was
// started with). Thread-safe.
class ServerPaths {
public:
    static ServerPaths& instance();

    void add(const std::filesystem::path& root, bool name_prefix = false);
    bool clean(std::string_view text) const;
    std::string redact(std::string_view text) const;
    void redact_json(nlohmann::json& value) const;
    // A copy of the roots now (tests).
    PathRedactor snapshot() const;

private:
    ServerPaths();
    mutable std::shared_mutex mutex_;
    PathRedactor redactor_;
};

// The prefix of the folders the gateway stages uploads in (load_routes.cpp).
std::filesystem::path upload_folder_prefix();

}  // namespace glassbox::gateway
