// The safe-write module (src/core/safe_write.h): exclusive temp files, no
// followed plants, devices and FIFOs in place, failures leave the old file.
#define _XOPEN_SOURCE 700  // setrlimit, symlink
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safe_write.h"
#include "core/io.h"
#include "s2s/status.h"
#include "support.h"

TestSuite(safe_write, .init = tmpdir_make, .fini = tmpdir_remove);

// The names in dir, sorted, joined by spaces ("" if empty).
static char *listing(const char *dir) {
    static char out[4096];
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)  // insertion sort: a handful of names
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            strcpy(t, names[j]);
            strcpy(names[j], names[j - 1]);
            strcpy(names[j - 1], t);
        }
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, " ");
        strcat(out, names[i]);
    }
    return out;
}

static void assert_file_is(const char *path, const char *text) {
    size_t n;
    unsigned char *got = slurp(path, &n);
    cr_assert_eq(n, strlen(text), "%s: %zu bytes, expected %zu", path, n, strlen(text));
    cr_assert_str_eq((char *)got, text, "%s", path);
    free(got);
}

static mode_t lmode(const char *path) {
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
    return st.st_mode;
}

Test(safe_write, writes_a_new_file_and_leaves_only_it) {
    cr_assert_eq(s2s_safe_write_file(tmp_path("out"), "hello\n", 6), S2S_OK, "%s",
                 s2s_last_error());
    assert_file_is(tmp_path("out"), "hello\n");
    cr_assert_str_eq(listing(tmpdir), "out");
}

Test(safe_write, replaces_a_regular_file_keeping_its_permissions) {
    spit(tmp_path("out"), "old contents", 12);
    cr_assert_eq(chmod(tmp_path("out"), 0640), 0);
    cr_assert_eq(s2s_safe_write_file(tmp_path("out"), "new", 3), S2S_OK, "%s", s2s_last_error());
    assert_file_is(tmp_path("out"), "new");
    cr_assert_eq(lmode(tmp_path("out")) & 07777, 0640);
    cr_assert_str_eq(listing(tmpdir), "out");
}

// The old writers used OUT.tmp.PID (html, safetensors) and OUT.tmpPID
// (vocab) with fopen("wb"), which followed a symlink planted there.
Test(safe_write, a_symlink_planted_at_an_old_temp_name_is_not_followed) {
    spit(tmp_path("victim"), "precious", 8);
    char plant[2][64];
    snprintf(plant[0], sizeof plant[0], "out.tmp.%ld", (long)getpid());
    snprintf(plant[1], sizeof plant[1], "out.tmp%ld", (long)getpid());
    for (int i = 0; i < 2; i++) cr_assert_eq(symlink(tmp_path("victim"), tmp_path(plant[i])), 0);

    cr_assert_eq(s2s_safe_write_file(tmp_path("out"), "new", 3), S2S_OK, "%s", s2s_last_error());
    assert_file_is(tmp_path("victim"), "precious");
    assert_file_is(tmp_path("out"), "new");
    for (int i = 0; i < 2; i++) cr_assert(S_ISLNK(lmode(tmp_path(plant[i]))), "%s", plant[i]);
    cr_assert(S_ISREG(lmode(tmp_path("out"))));
}

Test(safe_write, the_temp_file_is_new_beside_the_target_and_distinct_per_write) {
    s2s_safe_file a, b;
    cr_assert_eq(s2s_safe_open(&a, tmp_path("out")), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_safe_open(&b, tmp_path("out")), S2S_OK, "%s", s2s_last_error());
    cr_assert_str_neq(a.tmp, b.tmp);
    cr_assert_eq(strncmp(a.tmp, tmp_path("out."), strlen(tmp_path("out."))), 0, "%s", a.tmp);
    cr_assert(S_ISREG(lmode(a.tmp)));
    s2s_safe_write(&a, "first", 5);
    s2s_safe_write(&b, "second", 6);
    cr_assert_eq(s2s_safe_commit(&a), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_safe_commit(&b), S2S_OK, "%s", s2s_last_error());
    assert_file_is(tmp_path("out"), "second");
    cr_assert_str_eq(listing(tmpdir), "out");
}

Test(safe_write, abort_leaves_the_old_file_and_no_temp) {
    spit(tmp_path("out"), "old", 3);
    s2s_safe_file f;
    cr_assert_eq(s2s_safe_open(&f, tmp_path("out")), S2S_OK);
    s2s_safe_write(&f, "half of a new", 13);
    s2s_safe_abort(&f);
    assert_file_is(tmp_path("out"), "old");
    cr_assert_str_eq(listing(tmpdir), "out");
}

// RLIMIT_FSIZE makes write() fail with EFBIG past the limit, in this process
// only (Criterion runs each test in its own): a failing disk without a mount.
Test(safe_write, a_failed_write_leaves_the_old_file_and_no_temp) {
    spit(tmp_path("out"), "old", 3);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static char big[100000];
    cr_assert_eq(s2s_safe_write_file(tmp_path("out"), big, sizeof big), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), tmp_path("out")), "%s", s2s_last_error());
    cr_assert(strstr(s2s_last_error(), strerror(EFBIG)), "%s", s2s_last_error());
    assert_file_is(tmp_path("out"), "old");
    cr_assert_str_eq(listing(tmpdir), "out");
}

// The same through f->fp (stdio's own buffer): caught at commit.
Test(safe_write, a_failed_stdio_write_is_caught_at_commit) {
    spit(tmp_path("out"), "old", 3);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    s2s_safe_file f;
    cr_assert_eq(s2s_safe_open(&f, tmp_path("out")), S2S_OK);
    for (int i = 0; i < 10000; i++) fprintf(f.fp, "line %d\n", i);
    cr_assert_eq(s2s_safe_commit(&f), S2S_ERR_IO);
    assert_file_is(tmp_path("out"), "old");
    cr_assert_str_eq(listing(tmpdir), "out");
}

Test(safe_write, a_failed_rename_is_an_error_and_removes_the_temp) {
    s2s_safe_file f;
    cr_assert_eq(s2s_safe_open(&f, tmp_path("out")), S2S_OK);
    // A non-empty folder appears at the target: rename(2) cannot replace it.
    cr_assert_eq(mkdir(tmp_path("out"), 0700), 0);
    spit(tmp_path("out/keep"), "k", 1);
    s2s_safe_write(&f, "new", 3);
    cr_assert_eq(s2s_safe_commit(&f), S2S_ERR_IO);
    cr_assert(S_ISDIR(lmode(tmp_path("out"))));
    cr_assert_str_eq(listing(tmpdir), "out");
}

Test(safe_write, a_target_symlink_is_written_through_and_stays_a_link) {
    cr_assert_eq(mkdir(tmp_path("real"), 0700), 0);
    spit(tmp_path("real/model"), "old", 3);
    cr_assert_eq(symlink("real/model", tmp_path("link")), 0);  // relative, as users make them
    cr_assert_eq(s2s_safe_write_file(tmp_path("link"), "new", 3), S2S_OK, "%s", s2s_last_error());
    cr_assert(S_ISLNK(lmode(tmp_path("link"))));
    assert_file_is(tmp_path("real/model"), "new");
    cr_assert_str_eq(listing(tmpdir), "link real");
    cr_assert_str_eq(listing(tmp_path("real")), "model");
}

Test(safe_write, a_dangling_symlink_is_refused) {
    cr_assert_eq(symlink("nowhere", tmp_path("link")), 0);
    cr_assert_eq(s2s_safe_write_file(tmp_path("link"), "new", 3), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "symlink to a missing file"), "%s", s2s_last_error());
    cr_assert(S_ISLNK(lmode(tmp_path("link"))));
    cr_assert_str_eq(listing(tmpdir), "link");
}

Test(safe_write, a_directory_is_refused) {
    cr_assert_eq(mkdir(tmp_path("d"), 0700), 0);
    cr_assert_eq(s2s_safe_write_file(tmp_path("d"), "x", 1), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "a directory"), "%s", s2s_last_error());
    cr_assert_str_eq(listing(tmp_path("d")), "");
}

// A character device is written in place: the node stays (as root, the old
// rename replaced /dev/full with a regular file).
static void assert_device_kept(const char *path, const struct stat *before) {
    struct stat after;
    cr_assert_eq(lstat(path, &after), 0);
    cr_assert(S_ISCHR(after.st_mode), "%s is no longer a character device", path);
    cr_assert_eq(after.st_rdev, before->st_rdev);
    cr_assert_eq(after.st_ino, before->st_ino);
}

Test(safe_write, dev_null_is_written_in_place) {
    struct stat before;
    cr_assert_eq(lstat("/dev/null", &before), 0);
    s2s_safe_file f;
    cr_assert_eq(s2s_safe_open(&f, "/dev/null"), S2S_OK, "%s", s2s_last_error());
    cr_assert_null(f.tmp);
    s2s_safe_write(&f, "gone", 4);
    cr_assert_eq(s2s_safe_commit(&f), S2S_OK, "%s", s2s_last_error());
    assert_device_kept("/dev/null", &before);
}

Test(safe_write, dev_full_reports_no_space_and_stays_a_device) {
    struct stat before;
    cr_assert_eq(lstat("/dev/full", &before), 0);
    static char data[10000];
    cr_assert_eq(s2s_safe_write_file("/dev/full", data, sizeof data), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "/dev/full: cannot write: No space left on device"), "%s",
              s2s_last_error());
    // Small writes stay in stdio's buffer until commit: reported there.
    cr_assert_eq(s2s_safe_write_file("/dev/full", "x", 1), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "No space left on device"), "%s", s2s_last_error());
    assert_device_kept("/dev/full", &before);
}

Test(safe_write, a_symlink_to_a_device_writes_to_the_device) {
    struct stat before;
    cr_assert_eq(lstat("/dev/full", &before), 0);
    cr_assert_eq(symlink("/dev/full", tmp_path("link")), 0);
    cr_assert_eq(s2s_safe_write_file(tmp_path("link"), "x", 1), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "No space left on device"), "%s", s2s_last_error());
    cr_assert(S_ISLNK(lmode(tmp_path("link"))));
    assert_device_kept("/dev/full", &before);
    cr_assert_str_eq(listing(tmpdir), "link");
}

Test(safe_write, a_fifo_is_written_in_place) {
    cr_assert_eq(mkfifo(tmp_path("pipe"), 0600), 0);
    // A reader first, so the writer's open does not wait.
    int rd = open(tmp_path("pipe"), O_RDONLY | O_NONBLOCK);
    cr_assert_geq(rd, 0);
    cr_assert_eq(s2s_safe_write_file(tmp_path("pipe"), "through", 7), S2S_OK, "%s",
                 s2s_last_error());
    char buf[16] = {0};
    cr_assert_eq(read(rd, buf, sizeof buf), 7);
    cr_assert_str_eq(buf, "through");
    close(rd);
    cr_assert(S_ISFIFO(lmode(tmp_path("pipe"))));
    cr_assert_str_eq(listing(tmpdir), "pipe");
}

Test(safe_write, a_missing_folder_is_an_error_naming_the_path) {
    cr_assert_eq(s2s_safe_write_file(tmp_path("no/such/out"), "x", 1), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), tmp_path("no/such/out")), "%s", s2s_last_error());
    cr_assert(strstr(s2s_last_error(), strerror(ENOENT)), "%s", s2s_last_error());
    cr_assert_str_eq(listing(tmpdir), "");
}

// ---- s2s_check_writable: the writer's verdict, with nothing written ----

// For each kind of target, the check agrees with what the writer then does
// (the same status and message) and leaves the folder as it was.
Test(safe_write, check_writable_agrees_with_the_writer_and_writes_nothing) {
    spit(tmp_path("old"), "old", 3);
    cr_assert_eq(mkdir(tmp_path("dir"), 0700), 0);
    cr_assert_eq(symlink(tmp_path("old"), tmp_path("to_old")), 0);
    cr_assert_eq(symlink(tmp_path("gone"), tmp_path("dangling")), 0);
    cr_assert_eq(symlink("/dev/null", tmp_path("to_null")), 0);
    const char *names[] = {"new", "old", "dir", "to_old", "dangling", "to_null", "no/such/out"};
    const bool ok[] = {true, true, false, true, false, true, false};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *path = tmp_path(names[i]);
        char before[4096], msg[512] = "";
        snprintf(before, sizeof before, "%s", listing(tmpdir));
        s2s_status checked = s2s_check_writable(path);
        if (checked != S2S_OK) snprintf(msg, sizeof msg, "%s", s2s_last_error());
        cr_assert_str_eq(listing(tmpdir), before, "%s: the check wrote something", names[i]);
        cr_assert_eq(checked == S2S_OK, ok[i], "%s: %s", names[i], msg);
        s2s_status wrote = s2s_safe_write_file(path, "new", 3);
        cr_assert_eq(wrote, checked, "%s: the writer says %s", names[i], s2s_status_str(wrote));
        if (wrote != S2S_OK) cr_assert_str_eq(s2s_last_error(), msg, "%s", names[i]);
    }
    cr_assert_eq(s2s_check_writable("/dev/null"), S2S_OK);
    cr_assert_eq(s2s_check_writable(tmpdir), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), "cannot write: a directory"), "%s", s2s_last_error());
}
