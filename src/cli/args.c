// The shared option parser of the commands (args.h): options anywhere,
// `--` ends them, help and did-you-mean from each command's table.
#include "cli/args.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

// -h/--help, which every command takes: a table of one, ended as the others.
static const s2s_opt help_table[] = {
    {.name = "--help", .alias = "-h", .help = "print this help and exit"},
    {0},
};
static const s2s_opt *const help_opt = help_table;

// The option of spec named name[0..n) (its name or alias), or NULL.
static const s2s_opt *find(const s2s_opt *opts, const char *name, size_t n) {
    for (const s2s_opt *o = opts; o && o->name; o++) {
        if (strlen(o->name) == n && !memcmp(o->name, name, n)) return o;
        if (o->alias && strlen(o->alias) == n && !memcmp(o->alias, name, n)) return o;
    }
    return NULL;
}

static const s2s_opt *lookup(const s2s_cmd_spec *spec, const char *name, size_t n) {
    const s2s_opt *o = find(spec->opts, name, n);
    if (!o && spec->decode) o = find(s2s_cli_decode_table, name, n);
    if (!o) o = find(help_table, name, n);
    return o;
}

static void offer_all(s2s_suggest *s, const s2s_opt *opts) {
    for (const s2s_opt *o = opts; o && o->name; o++) s2s_suggest_offer(s, o->name);
}

static int unknown(const s2s_cmd_spec *spec, const char *arg, size_t n) {
    s2s_suggest s = s2s_suggest_start(arg, n);
    offer_all(&s, spec->opts);
    if (spec->decode) offer_all(&s, s2s_cli_decode_table);
    s2s_suggest_offer(&s, help_opt->name);
    if (s.best)
        return s2s_cli_usage_error(spec->name, "unknown option '%.*s' (did you mean '%s'?)",
                                   (int)n, arg, s.best);
    return s2s_cli_usage_error(spec->name, "unknown option '%.*s' (see s2s %s --help)", (int)n,
                               arg, spec->name);
}

int s2s_args_parse(const s2s_cmd_spec *spec, int argc, char **argv, s2s_args *a) {
    *a = (s2s_args){0};
    // Each argument is at most one option or one positional.
    a->opts = malloc(((size_t)argc + 1) * sizeof *a->opts);
    a->pos = malloc(((size_t)argc + 1) * sizeof *a->pos);
    if (!a->opts || !a->pos) {
        fprintf(stderr, "s2s %s: out of memory\n", spec->name);
        return S2S_EXIT_FAILURE;
    }
    bool options_end = false;
    for (int i = 0; i < argc; i++) {
        char *x = argv[i];
        if (options_end || x[0] != '-' || !x[1]) {  // "-" is stdin, a positional
            a->pos[a->n_pos++] = x;
            continue;
        }
        if (!strcmp(x, "--")) {
            options_end = true;
            continue;
        }
        const char *eq = x[1] == '-' ? strchr(x, '=') : NULL;
        size_t n = eq ? (size_t)(eq - x) : strlen(x);
        const s2s_opt *o = lookup(spec, x, n);
        // "--no-replace-unknowns": a switch that sets a boolean key, set false.
        bool negated = false;
        if (!o && n > 5 && !strncmp(x, "--no-", 5)) {
            char plain[128];
            int m = snprintf(plain, sizeof plain, "--%.*s", (int)(n - 5), x + 5);
            const s2s_opt *p = m < (int)sizeof plain ? lookup(spec, plain, (size_t)m) : NULL;
            if (p && p->key && !p->value) o = p, negated = true;
        }
        if (!o) return unknown(spec, x, n);
        const char *value = negated ? "false" : NULL;
        if (eq && (!o->value || negated))
            return s2s_cli_usage_error(spec->name, "%.*s takes no value", (int)n, x);
        if (eq) {
            value = eq + 1;
        } else if (o->value && o->optional) {
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            if (next && (next[0] != '-' || !strcmp(next, "-"))) value = argv[++i];
        } else if (o->value) {
            if (i + 1 >= argc)
                return s2s_cli_usage_error(spec->name, "%s needs a value (%s)", o->name, o->value);
            value = argv[++i];
        }
        if (o == help_opt) {  // the help, and nothing else: no option or positional left
            s2s_args_help(spec, stdout);
            a->help = true;
            a->n_opts = a->n_pos = 0;
            return S2S_EXIT_OK;
        }
        a->opts[a->n_opts++] = (s2s_arg){o, value};
    }
    return S2S_EXIT_OK;
}

void s2s_args_free(s2s_args *a) {
    free(a->opts);
    free(a->pos);
    *a = (s2s_args){0};
}

bool s2s_arg_is(const s2s_arg *x, const char *name) { return !strcmp(x->opt->name, name); }

// ---- help ----

// The schema's default of key, from its reference entry ("...; default 1"),
// into buf; "" when the entry has none.
static const char *schema_default(const char *key, char *buf, size_t size) {
    char *text = NULL;
    buf[0] = '\0';
    if (s2s_config_explain(key, &text) != S2S_OK) return buf;
    const char *eol = strchr(text, '\n'), *d = strstr(text, "; default ");
    if (d && (!eol || d < eol)) {
        d += strlen("; default ");
        size_t n = eol ? (size_t)(eol - d) : strlen(d);
        snprintf(buf, size, "%.*s", (int)n, d);
    }
    free(text);
    return buf;
}

static void print_opt(const s2s_opt *o, FILE *f) {
    char left[128], def[128];
    // A switch that sets a boolean key also has its --no- form.
    bool no = o->key && !o->value;
    snprintf(left, sizeof left, "%s%s%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "",
             no ? "--[no-]" : "", no ? o->name + 2 : o->name, o->value ? " " : "",
             o->optional ? "[" : "", o->value ? o->value : "");
    if (o->optional) strncat(left, "]", sizeof left - strlen(left) - 1);
    fprintf(f, "  %-24s", left);
    if (strlen(left) > 23) fprintf(f, "\n  %-24s", "");  // keep a space before the help
    if (no) {
        fprintf(f, "sets %s to true, --no-%s to false (default: the model's; the schema's "
                "is %s)\n", o->key, o->name + 2,
                *schema_default(o->key, def, sizeof def) ? def : "none");
        return;
    }
    if (o->key) {
        fprintf(f, "sets %s (default: the model's; the schema's is %s)\n", o->key,
                *schema_default(o->key, def, sizeof def) ? def : "none");
        return;
    }
    fprintf(f, "%s", o->help);
    if (o->def) fprintf(f, " (default: %s)", o->def);
    fputc('\n', f);
}

void s2s_args_help(const s2s_cmd_spec *spec, FILE *f) {
    fprintf(f, "usage: %s\n", spec->usage);
    if (spec->about) fprintf(f, "\n%s\n", spec->about);
    fprintf(f, "\noptions (anywhere on the line; `--` ends them; --name=value works too):\n");
    for (const s2s_opt *o = spec->opts; o && o->name; o++) print_opt(o, f);
    print_opt(help_opt, f);
    if (!spec->decode) return;
    fprintf(f, "\nmodel and decoding options (each flag is --set KEY=VALUE over the model's "
               "decode: config):\n");
    for (const s2s_opt *o = s2s_cli_decode_table; o->name; o++) print_opt(o, f);
}
