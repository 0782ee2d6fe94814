// Folders and files only their owner may use: created 0700 and 0600, never reached through a
// symbolic link, and never chmodded when they exist already (a shared folder stays as it is).
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::base {

inline constexpr std::filesystem::perms kOwnerOnlyFolder = std::filesystem::perms::owner_all;
inline constexpr std::filesystem::perms kOwnerOnlyFile =
    std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

// A home folder: created 0700 when missing (missing parents too, 0700). An existing one (a
// symbolic link to a folder is followed: the home may live elsewhere) must be a folder owned by
// this user that no one else may write (no group or other write bit); else kInvalidRequest
// saying why. Its mode is never changed.
Result<void> ensure_home_folder(const std::filesystem::path& folder);

// A folder inside a home (logs/, run/, knowledge/): created 0700 when missing. An existing one
// must be a folder itself, not a symbolic link, owned by this user and writable by no one else;
// else kInvalidRequest saying why. Its mode is never changed.
Result<void> ensure_owner_only_folder(const std::filesystem::path& folder);

// Opens `path` for writing, appended to or truncated, creating it 0600; never through a symbolic
// link (O_NOFOLLOW), and only a regular file of this user's with one link (not a hard link to
// another file); an existing such file is made 0600 through its descriptor. The descriptor is
// O_CLOEXEC; the caller closes it. kInvalidRequest for a symbolic link or a file that is not
// this user's own, kInternal for other failures.
enum class OpenFor { kAppend, kTruncate };
Result<int> open_owner_only_file(const std::filesystem::path& path, OpenFor how);

// Replaces `path` with `text` atomically: a new 0600 sibling (O_EXCL, O_NOFOLLOW), written,
// fsync'd and renamed over `path` (a symbolic link at `path` is replaced, not followed).
Result<void> write_owner_only_file(const std::filesystem::path& path, std::string_view text);

// A secret's file (the gateway's tokens): read whole, after checking that it is a regular file
// (a symbolic link is not followed) owned by this user that no one else may read or write (mode
// 0600 or 0400). kInvalidRequest saying why otherwise (the fix: chmod 600); files above
// `max_bytes` are refused too.
Result<std::string> read_owner_only_secret(const std::filesystem::path& path,
                                           std::size_t max_bytes);

}  // namespace glassbox::base
