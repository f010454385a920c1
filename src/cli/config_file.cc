#include "cli/config_file.h"

#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text.h"

namespace fxt::cli {
namespace {

bool bare_key(std::string_view k) {
  if (k.empty()) return false;
  for (char ch : k) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

struct Value {
  std::string text;
  bool is_string = false;
};

bool number_token(std::string_view t) {
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
  bool exp = false;
  for (; i < t.size(); ++i) {
    const char ch = t[i];
    if ((ch >= '0' && ch <= '9') || ch == '_' || ch == '.') continue;
    if ((ch == 'e' || ch == 'E') && !exp) {
      exp = true;
      if (i + 1 < t.size() && (t[i + 1] == '+' || t[i + 1] == '-')) ++i;
      continue;
    }
    return false;
  }
  return true;
}

class LineParser {
 public:
  LineParser(std::string file, int line) : file_(std::move(file)), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigFileError(fmt::format("{}:{}: {}", file_, line_, what));
  }

  // One scalar starting at s[*i]; advances *i past it.
  Value scalar(const std::string& key, std::string_view s, size_t* i) const {
    Value v;
    const char q = s[*i];
    if (q == '"' || q == '\'') {
      v.is_string = true;
      for (size_t j = *i + 1; j < s.size(); ++j) {
        const char ch = s[j];
        if (ch == q) {
          *i = j + 1;
          return v;
        }
        if (ch == '\\' && q == '"') {
          if (++j >= s.size()) break;
          switch (s[j]) {
            case 'n': v.text += '\n'; break;
            case 't': v.text += '\t'; break;
            case '"': v.text += '"'; break;
            case '\\': v.text += '\\'; break;
            default: fail(fmt::format("'{}': unknown escape '\\{}' in a string", key, s[j]));
          }
          continue;
        }
        v.text += ch;
      }
      fail(fmt::format("'{}': unterminated string (expected a closing {})", key, q));
    }
    size_t j = *i;
    while (j < s.size() && s[j] != ',' && s[j] != ']' && s[j] != ' ' && s[j] != '\t') ++j;
    const std::string token(s.substr(*i, j - *i));
    *i = j;
    if (token == "true" || token == "false") {
      v.text = token;
      return v;
    }
    if (!number_token(token)) {
      fail(fmt::format("'{}': cannot read '{}' (expected a number, true or false, a \"string\" "
                       "or an [array])",
                       key, token));
    }
    for (char ch : token) {
      if (ch != '_') v.text += ch;
    }
    return v;
  }

  std::vector<Value> values(const std::string& key, std::string_view s) const {
    std::vector<Value> out;
    size_t i = 0;
    auto skip_ws = [&] {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    };
    if (s.empty()) fail(fmt::format("'{}' has no value (expected key = value)", key));
    if (s[0] != '[') {
      out.push_back(scalar(key, s, &i));
      skip_ws();
      if (i != s.size()) fail(fmt::format("'{}': unexpected text after the value", key));
      return out;
    }
    ++i;
    for (;;) {
      skip_ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
        break;
      }
      if (i >= s.size()) fail(fmt::format("'{}': unterminated array (expected ']')", key));
      if (s[i] == '[') fail(fmt::format("'{}': nested arrays are not supported", key));
      out.push_back(scalar(key, s, &i));
      skip_ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == ']') {
        ++i;
        break;
      }
      fail(fmt::format("'{}': expected ',' or ']' in the array", key));
    }
    skip_ws();
    if (i != s.size()) fail(fmt::format("'{}': unexpected text after the array", key));
    return out;
  }

  int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

std::vector<std::string> subcommand_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> option_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back(n);
    if (!opt->get_positional()) continue;
    names.push_back(opt->get_name());
  }
  return names;
}

CLI::Option* find_option(CLI::App* app, const std::string& key) {
  CLI::Option* op = app->get_option_no_throw("--" + key);
  if (op == nullptr && key.size() == 1) op = app->get_option_no_throw("-" + key);
  if (op == nullptr) op = app->get_option_no_throw(key);
  return op;
}

std::string hint(const std::string& name, const std::vector<std::string>& candidates,
                 const char* open, const char* close) {
  const std::string best = closest_name(name, candidates);
  return best.empty() ? std::string() : fmt::format(" (did you mean {}{}{}?)", open, best, close);
}

// The option's own numeric check (cli/flag_checks.h), run here so its refusal names the line.
void check_value(const LineParser& lp, CLI::Option* op, const std::string& key, const Value& v) {
  std::string type = op->get_type_name();
  type = type.substr(0, type.find(':'));
  const bool numeric = type == "INT" || type == "UINT" || type == "FLOAT";
  if (op->get_expected_min() == 0) {  // a switch (add_flag)
    if (v.is_string || (v.text != "true" && v.text != "false")) {
      lp.fail(fmt::format("'{}' is a switch: expected true or false (got '{}')", key, v.text));
    }
    return;
  }
  if (numeric && v.is_string) {
    lp.fail(fmt::format("'{}' expects a number, not the string \"{}\"", key, v.text));
  }
  for (const char* name : {"fxt-int-range", "fxt-finite"}) {
    CLI::Validator* check = nullptr;
    try {
      check = op->get_validator(name);
    } catch (const CLI::OptionNotFound&) {
      continue;
    }
    std::string copy = v.text;
    const std::string err = (*check)(copy);
    if (!err.empty()) lp.fail(fmt::format("'{}': {}", key, err));
  }
}

}  // namespace

std::vector<CLI::ConfigItem> StrictTomlConfig::from_config(std::istream& input) const {
  std::ostringstream buf;
  buf << input.rdbuf();
  std::string file = "config";
  if (const CLI::Option* opt = root_->get_config_ptr(); opt != nullptr && opt->count() > 0) {
    file = opt->as<std::vector<std::string>>().back();
  }
  return parse(buf.str(), file);
}

std::vector<CLI::ConfigItem> StrictTomlConfig::parse(const std::string& text,
                                                     const std::string& file) const {
  if (const size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    throw ConfigFileError(fmt::format(
        "{}: byte {} (0x{:02x}) is not UTF-8 text: not a TOML file", file, bad,
        static_cast<unsigned>(static_cast<unsigned char>(text[bad]))));
  }
  std::vector<CLI::ConfigItem> out;
  std::vector<std::string> path;  // the current [section], split at '.'
  CLI::App* app = root_;
  std::map<std::string, int> seen;  // "section.key" -> line
  const std::vector<std::string> lines = split_fields(text, '\n');
  for (size_t li = 0; li < lines.size(); ++li) {
    const int line_no = static_cast<int>(li) + 1;
    LineParser lp(file, line_no);
    std::string line(trim_blanks(strip_toml_comment(lines[li])));
    if (line.empty()) continue;
    if (line[0] == '[') {
      if (line.size() >= 2 && line[1] == '[') lp.fail("arrays of tables ([[...]]) are not supported");
      if (line.back() != ']') lp.fail(fmt::format("malformed section header '{}' (expected '[name]')", line));
      const std::string name(trim_blanks(std::string_view(line).substr(1, line.size() - 2)));
      path.clear();
      app = root_;
      for (const std::string& part : split_fields(name, '.')) {
        if (!bare_key(part)) lp.fail(fmt::format("malformed section name '[{}]'", name));
        CLI::App* sub = nullptr;
        for (CLI::App* s : app->get_subcommands([](CLI::App*) { return true; })) {
          if (s->get_name() == part) sub = s;
        }
        if (sub == nullptr) {
          std::string prefix;
          for (const std::string& p : path) prefix += p + ".";
          std::vector<std::string> cands;
          for (const std::string& c : subcommand_names(app)) cands.push_back(prefix + c);
          lp.fail(fmt::format("unknown section [{}]{}", prefix + part,
                              hint(prefix + part, cands, "[", "]")));
        }
        path.push_back(part);
        app = sub;
      }
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      lp.fail(fmt::format("expected 'key = value' or '[section]' (got '{}')", line));
    }
    const std::string key(trim_blanks(std::string_view(line).substr(0, eq)));
    if (!bare_key(key)) lp.fail(fmt::format("malformed key '{}'", key));
    std::string value(trim_blanks(std::string_view(line).substr(eq + 1)));
    // A multi-line array continues until its brackets close.
    while (toml_bracket_depth(value) > 0 && li + 1 < lines.size()) {
      value.append(1, ' ').append(trim_blanks(strip_toml_comment(lines[++li])));
    }
    const std::vector<Value> values = lp.values(key, value);
    std::string section = path.empty() ? std::string() : fmt::format("{}", fmt::join(path, "."));
    CLI::Option* op = find_option(app, key);
    if (op == nullptr || op == root_->get_config_ptr()) {
      const std::string where = section.empty() ? "at the top level" : "in [" + section + "]";
      lp.fail(fmt::format("unknown key '{}' {}{}", key, where, hint(key, option_names(app), "'", "'")));
    }
    const std::string full = section + "." + key;
    if (auto it = seen.find(full); it != seen.end()) {
      lp.fail(fmt::format("key '{}' is given twice (first at line {})", key, it->second));
    }
    seen[full] = line_no;
    CLI::ConfigItem item;
    item.parents = path;
    item.name = key;
    for (const Value& v : values) {
      check_value(lp, op, key, v);
      item.inputs.push_back(v.text);
    }
    out.push_back(std::move(item));
  }
  return out;
}

void use_strict_config(CLI::App& app) {
  app.config_formatter(std::make_shared<StrictTomlConfig>(&app));
}

}  // namespace fxt::cli
