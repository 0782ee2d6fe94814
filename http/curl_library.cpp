// libcurl through dlopen (http/curl_library.hpp).
#include "http/curl_library.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace glassbox::http {
namespace {

template <typename Function>
bool resolve(void* library, const char* name, Function& out, std::string& missing) {
    void* symbol = ::dlsym(library, name);
    if (symbol == nullptr) {
        if (!missing.empty()) missing += ", ";
        missing += name;
        return false;
    }
    out = reinterpret_cast<Function>(symbol);
    return true;
}

}  // namespace

base::Result<CurlLibrary> load_curl_library(const std::vector<std::string>& files) {
    std::string tried;
    for (const auto& file : files) {
        if (!tried.empty()) tried += "; ";
        void* library = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            const char* why = ::dlerror();
            tried += why != nullptr ? std::string(why) : file + ": cannot be loaded";
            continue;
        }
        CurlLibrary lib{};
        lib.file = file;
        std::string missing;
        curl_version_info_data* (*version_info)(CURLversion) = nullptr;
        bool ok = resolve(library, "curl_version_info", version_info, missing);
        ok &= resolve(library, "curl_global_init", lib.global_init, missing);
        ok &= resolve(library, "curl_easy_init", lib.easy_init, missing);
        ok &= resolve(library, "curl_easy_setopt", lib.easy_setopt, missing);
        ok &= resolve(library, "curl_easy_perform", lib.easy_perform, missing);
        ok &= resolve(library, "curl_easy_getinfo", lib.easy_getinfo, missing);
        ok &= resolve(library, "curl_easy_reset", lib.easy_reset, missing);
        ok &= resolve(library, "curl_easy_cleanup", lib.easy_cleanup, missing);
        ok &= resolve(library, "curl_easy_strerror", lib.easy_strerror, missing);
        ok &= resolve(library, "curl_slist_append", lib.slist_append, missing);
        ok &= resolve(library, "curl_slist_free_all", lib.slist_free_all, missing);
        ok &= resolve(library, "curl_getdate", lib.getdate, missing);
        if (!ok) {
            ::dlclose(library);
            tried.append(file).append(": not libcurl (missing ").append(missing).append(")");
            continue;
        }
        const curl_version_info_data* info = version_info(CURLVERSION_NOW);
        lib.version = info != nullptr && info->version != nullptr ? info->version : "unknown";
        return lib;
    }
    return base::make_error(
        base::ErrorType::kInternal,
        "libcurl could not be loaded (the HTTP client needs it; Debian: libcurl4): " + tried);
}

const CurlLibrary& curl() {
    // A function-local static: initialised by one thread while any others wait; an exception
    // leaves it uninitialised for the next call.
    static const CurlLibrary library = [] {
        auto loaded = load_curl_library({"libcurl.so.4", "libcurl-gnutls.so.4"});
        if (!loaded) throw std::runtime_error(loaded.error().message);
        if (loaded->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            throw std::runtime_error("curl_global_init failed (" + loaded->file + ")");
        }
        return std::move(loaded).value();
    }();
    return library;
}

}  // namespace glassbox::http
