// libcurl, loaded when the first HTTP client is made (dlopen) instead of linked into every
// glassbox process. Linked, libcurl brought ~30 libraries (OpenSSL, GnuTLS, Kerberos, LDAP, SSH,
// RTMP…) and their initialisation into the broker, each worker and each CLI command at start:
// ~4 MiB of resident memory and ~8 ms of start-up, for the few processes that call a model
// server over HTTP (the LLM and embeddings workers with the `openai` provider). Only the calls
// glassbox makes are looked up; <curl/curl.h> still gives the types and constants.
#pragma once

#include <curl/curl.h>

#include <ctime>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace glassbox::http {

struct CurlLibrary {
    std::string file;     // the shared library that was loaded (e.g. libcurl.so.4)
    std::string version;  // curl_version_info's, e.g. "7.88.1"
    CURLcode (*global_init)(long flags);
    CURL* (*easy_init)();
    CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL* handle);
    CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
    void (*easy_reset)(CURL* handle);
    void (*easy_cleanup)(CURL* handle);
    const char* (*easy_strerror)(CURLcode code);
    curl_slist* (*slist_append)(curl_slist* list, const char* text);
    void (*slist_free_all)(curl_slist* list);
    std::time_t (*getdate)(const char* text, const std::time_t* unused);
};

// The first of `files` that loads and has every function; the error (kInternal) names each
// file tried and why it failed. A library loaded is never unloaded, so the functions stay valid
// for the life of the process.
base::Result<CurlLibrary> load_curl_library(const std::vector<std::string>& files);

// libcurl.so.4 (Debian's libcurl4, OpenSSL) or else libcurl-gnutls.so.4 (libcurl3-gnutls), loaded
// and curl_global_init'ed once for the process (that call is not thread-safe and must come before
// any handle; it is never undone: curl_global_cleanup at exit could race other users). Throws
// std::runtime_error with the loader's message when neither loads; a later call tries again.
const CurlLibrary& curl();

}  // namespace glassbox::http
