/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A strict reader of the text exposition format 0.0.4, for the tests of
 * daemon/http: what Prometheus would refuse or misread fails the test,
 * with the line. promtool, when installed, as a second opinion.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "exposition-check.h"
#include "macro.h"

static bool name_char(char c, bool first) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
               (!first && c >= '0' && c <= '9');
}

/* A metric or label name at @p: its length, 0 if none. */
static size_t name_len(const char *p, bool label) {
        size_t n = 0;

        while (p[n] && name_char(p[n], n == 0) && !(label && p[n] == ':'))
                n++;
        return n;
}

/* A histogram's sample names: the family's with one of these. */
static bool histogram_suffix(const char *s, size_t n) {
        static const char *const suffixes[] = { "_bucket", "_sum", "_count" };

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (strlen(suffixes[i]) == n && strncmp(s, suffixes[i], n) == 0)
                        return true;
        return false;
}

typedef struct Checked {
        char family[128];
        char type[16];
        char labels[128]; /* the label names of the family's first sample, for region families */
        unsigned samples;
} Checked;

typedef struct Reader {
        Checked fams[256];
        size_t nfam;
        Checked *cur;
        char **series; /* each sample's name and labels, to find one twice */
        size_t nseries;
        size_t lineno;
} Reader;

static int strcmp_p(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* "# HELP name text": a new family, never seen before. */
static void read_help(Reader *x, const char *line) {
        size_t k = name_len(line + 7, false);

        if (k == 0 || line[7 + k] != ' ')
                fail_msg("line %zu: bad HELP: %s", x->lineno, line);
        for (size_t i = 0; i < x->nfam; i++)
                if (strlen(x->fams[i].family) == k && strncmp(x->fams[i].family, line + 7, k) == 0)
                        fail_msg("line %zu: a second HELP of %s", x->lineno, x->fams[i].family);
        assert_true(x->nfam < ELEMENTSOF(x->fams) && k < sizeof(x->fams[0].family));
        x->cur = &x->fams[x->nfam++];
        memcpy(x->cur->family, line + 7, k);
}

/* "# TYPE name type", right after the family's HELP. */
static void read_type(Reader *x, const char *line) {
        Checked *c = x->cur;
        size_t k = name_len(line + 7, false), n;

        if (!c || c->type[0] || strlen(c->family) != k || strncmp(c->family, line + 7, k) != 0 ||
            line[7 + k] != ' ')
                fail_msg("line %zu: TYPE not right after its HELP: %s", x->lineno, line);
        snprintf(c->type, sizeof(c->type), "%s", line + 8 + k);
        if (strcmp(c->type, "gauge") != 0 && strcmp(c->type, "counter") != 0 &&
            strcmp(c->type, "histogram") != 0)
                fail_msg("line %zu: type %s", x->lineno, c->type);
        n = strlen(c->family);
        if (strcmp(c->type, "counter") == 0 && (n < 6 || strcmp(c->family + n - 6, "_total") != 0))
                fail_msg("line %zu: counter %s does not end in _total", x->lineno, c->family);
}

/* The labels at @line + @at ("{" ... "}"), their names to @names. Return: where they end. */
static size_t read_labels(Reader *x, const char *line, size_t at, char *names, size_t size) {
        for (at++;; at++) {
                size_t ln = name_len(line + at, true);

                if (ln == 0 || line[at + ln] != '=' || line[at + ln + 1] != '"')
                        fail_msg("line %zu: bad label at %zu: %s", x->lineno, at, line);
                if (strlen(names) + ln + 2 < size) {
                        strncat(names, line + at, ln);
                        strcat(names, ",");
                }
                /* The value: only \\, \" and \n are escapes. */
                for (at += ln + 2; line[at] != '"'; at++) {
                        if (!line[at])
                                fail_msg("line %zu: unterminated label value: %s", x->lineno, line);
                        if (line[at] == '\\' && (!line[++at] || !strchr("\\\"n", line[at])))
                                fail_msg("line %zu: bad escape: %s", x->lineno, line);
                }
                at++;
                if (line[at] == '}')
                        return at + 1;
                if (line[at] != ',')
                        fail_msg("line %zu: bad label list: %s", x->lineno, line);
        }
}

/* A sample of the open family: name, labels, a value. */
static void read_sample(Reader *x, const char *line) {
        Checked *c = x->cur;
        size_t k = name_len(line, false), n, at;
        char names[128] = "", *end;

        if (!c || !c->type[0] || k < strlen(c->family) || strncmp(line, c->family, strlen(c->family)) != 0)
                fail_msg("line %zu: a sample outside its family: %s", x->lineno, line);
        n = strlen(c->family);
        if (k != n && !(strcmp(c->type, "histogram") == 0 && histogram_suffix(line + n, k - n)))
                fail_msg("line %zu: a sample of another family: %s", x->lineno, line);
        at = line[k] == '{' ? read_labels(x, line, k, names, sizeof(names)) : k;
        if (line[at] != ' ')
                fail_msg("line %zu: no value: %s", x->lineno, line);
        if (strcmp(line + at + 1, "+Inf") != 0) {
                errno = 0;
                (void) strtod(line + at + 1, &end);
                if (end == line + at + 1 || *end || errno)
                        fail_msg("line %zu: bad value: %s", x->lineno, line);
        }
        /* A region family has one label set: what metrics-regions.c promises. */
        if (strncmp(c->family, "memacct_group_region_", 21) == 0 ||
            strncmp(c->family, "memacct_region_", 15) == 0) {
                if (c->samples == 0)
                        snprintf(c->labels, sizeof(c->labels), "%s", names);
                else if (strcmp(c->labels, names) != 0)
                        fail_msg("line %zu: %s has label sets {%s} and {%s}", x->lineno, c->family, c->labels,
                                 names);
        }
        c->samples++;
        x->series = realloc(x->series, (x->nseries + 1) * sizeof(*x->series));
        assert_non_null(x->series);
        x->series[x->nseries] = strndup(line, at);
        assert_non_null(x->series[x->nseries++]);
}

void exposition_check(const char *body) {
        Reader *x = calloc(1, sizeof(*x));

        assert_non_null(x);
        assert_true(strlen(body) > 0 && body[strlen(body) - 1] == '\n');
        for (const char *p = body; *p; x->lineno++) {
                const char *e = strchr(p, '\n');
                char line[2048];

                assert_true((size_t) (e - p) < sizeof(line));
                memcpy(line, p, (size_t) (e - p));
                line[e - p] = 0;
                p = e + 1;
                if (strncmp(line, "# HELP ", 7) == 0)
                        read_help(x, line);
                else if (strncmp(line, "# TYPE ", 7) == 0)
                        read_type(x, line);
                else if (line[0] == '#')
                        fail_msg("line %zu: a comment: %s", x->lineno, line);
                else
                        read_sample(x, line);
        }
        qsort(x->series, x->nseries, sizeof(*x->series), strcmp_p);
        for (size_t i = 0; i + 1 < x->nseries; i++)
                if (strcmp(x->series[i], x->series[i + 1]) == 0)
                        fail_msg("the series %s twice", x->series[i]);
        for (size_t i = 0; i < x->nseries; i++)
                free(x->series[i]);
        free(x->series);
        free(x);
}

int exposition_promtool(const char *body) {
        char path[] = "/tmp/test-metrics-regions-XXXXXX";
        char cmd[256];
        int fd, status;
        FILE *f;

        if (system("command -v promtool >/dev/null 2>&1") != 0)
                return -1;
        fd = mkstemp(path);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        assert_int_equal(fputs(body, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        snprintf(cmd, sizeof(cmd), "promtool check metrics <%s", path);
        status = system(cmd);
        (void) unlink(path);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
