// api_error.h — a request the server refuses, as OpenAI reports it:
// {"error": {"message", "type", "param", "code"}} with an HTTP status.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace llmwb::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error")
      : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)),
        type(std::move(type)) {}

  // The OpenAI error object; param and code are null where empty.
  nlohmann::json to_json() const { return error_json(what(), type, param, code); }
  static nlohmann::json error_json(const std::string& message, const std::string& type, const std::string& param,
                                   const std::string& code) {
    nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) e["param"] = param;
    if (!code.empty()) e["code"] = code;
    return {{"error", e}};
  }

  int status;
  std::string param, code, type;
};

}  // namespace llmwb::server
