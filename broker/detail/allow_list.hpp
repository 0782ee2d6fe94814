// The broker's folder of allowed CURVE keys: each public certificate names a key and its roles;
// read at start and again whenever the folder or one of its files changes (docs/security.md).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "bus/curve_keys.hpp"

namespace glassbox::broker {

// One allowed key: its certificate's name and roles.
struct AllowedPeer {
    std::string name;
    std::string public_key;  // Z85
    bus::PeerRoles roles;
};

class AllowList {
public:
    explicit AllowList(std::filesystem::path folder) : folder_(std::move(folder)) {}

    // Reads every `*.key` file in the folder (secret certificates, `*.key_secret`, are not read:
    // the broker needs no one's secret). A file that is not a certificate is skipped and named
    // in `problems()`; a folder that cannot be read is an error (the list is unchanged).
    base::Result<void> load();
    // load() if the folder or any of its files changed since the last look (names, sizes,
    // modification times). True if it loaded; an error if that load failed.
    base::Result<bool> reload_if_changed();

    // The peer of a Z85 public key, or nullptr: not allowed.
    const AllowedPeer* find(std::string_view public_key) const;

    std::size_t size() const noexcept { return peers_.size(); }
    const std::vector<std::string>& problems() const noexcept { return problems_; }
    const std::filesystem::path& folder() const noexcept { return folder_; }

private:
    base::Result<std::string> signature() const;

    std::filesystem::path folder_;
    std::string signature_;
    // By public key; looked up with the User-Id of every message, so without building a string.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const noexcept {
            return std::hash<std::string_view>{}(key);
        }
    };
    std::unordered_map<std::string, AllowedPeer, KeyHash, std::equal_to<>> peers_;
    std::vector<std::string> problems_;
};

}  // namespace glassbox::broker
