#!/usr/bin/env bash
# `s2s probe coref` end to end with the shipped models on the hand-checked
# gold files of tests/data/coref: the table equals antecedent accuracy and
# weight recomputed from `s2s align --map enc --format json` maps, --json
# parses, --calibrate -o writes a copy whose metadata `s2s inspect` shows
# and whose plane `align --map enc` then opens on, bad lines are warned
# with file:line (exit 3), --show prints a pronoun's row, --help and usage
# errors exit as documented.   cli_probe_test.sh PATH_TO_s2s
set -u
s2s=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
py=/usr/bin/python3
pycheck() {  # pycheck SCRIPT ARGS...
  local script=$1; shift
  "$py" -c "$script" "$@" || { echo "  python check failed"; return 1; }
}
models=$here/../models
gold_en=$here/data/coref/gold.en-zh.tsv
gold_zh=$here/data/coref/gold.zh-en.tsv
P=("$s2s" probe coref)

# ---- the table against a recomputation from align's JSON maps ----
for dir in en-zh zh-en; do
  gold=$here/data/coref/gold.$dir.tsv
  model=$models/$dir.safetensors
  check "$dir: table exit 0" run 0 "${P[@]}" -m "$model" "$gold"
  check "$dir: table counts the links" out_has "20 sentences, 20 links"
  check "$dir: 15 planes (2 layers x 4 heads, averages)" \
    bash -c "[ \$(grep -cE '^(avg|[0-9]+) +(avg|[0-9]+) +[0-9.]+ +[0-9.]+' '$tmp/out') -eq 15 ]"
  cp "$tmp/out" "$tmp/table.$dir"
  check "$dir: json exit 0" run 0 "${P[@]}" -m "$model" "$gold" --json
  cp "$tmp/out" "$tmp/probe.$dir.json"
  cut -f1 "$gold" | "$s2s" align -m "$model" --map enc --layer all --head all --format json \
    >"$tmp/maps.$dir.json"
  check "$dir: table = plain loops over align's maps" pycheck '
import json, sys, unicodedata
probe = json.load(open(sys.argv[1]))
gold = [l.rstrip("\n").split("\t") for l in open(sys.argv[2], encoding="utf-8")]
maps = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8")]
table = open(sys.argv[4], encoding="utf-8").read().splitlines()
assert probe["links"] == 20 and probe["sentences"] == 20 and len(probe["planes"]) == 15, probe
punct = lambda t: unicodedata.category(t[0]).startswith("P")
want = {}
for cols, m in zip(gold, maps):
    toks = m["source_tokens"]
    for link in cols[3].split("|")[0].split():
        p, a = map(int, link.split("-"))
        for plane in m["maps"]:
            row = plane["weights"][p]
            cand = [c for c in range(len(toks)) if c != p and not punct(toks[c])]
            hit = all(row[a] > row[c] for c in cand if c != a)
            k = (str(plane["layer"]), str(plane["head"]))
            n, h, w = want.get(k, (0, 0, 0.0))
            want[k] = (n + 1, h + hit, w + row[a])
for pl in probe["planes"]:
    n, h, w = want[(str(pl["layer"]), str(pl["head"]))]
    assert pl["hits"] == h and abs(pl["accuracy"] - h / n) < 1e-9, (pl, h, n)
    assert abs(pl["weight"] - w / n) < 1e-4, (pl, w / n)
best = max(probe["planes"], key=lambda pl: (pl["accuracy"], pl["weight"]))
assert (best["accuracy"], best["weight"]) == (probe["best"]["accuracy"], probe["best"]["weight"])
# the text table prints the same figures, "best" on the best plane
rows = [l.split() for l in table if l[:1] in "0123456789a" and not l.startswith("#")]
for r, pl in zip(rows, probe["planes"]):
    assert r[:2] == [str(pl["layer"]), str(pl["head"])] and abs(float(r[2]) - pl["accuracy"]) < 6e-5, (r, pl)
marked = [r[:2] for r in rows if "best" in r]
assert marked == [[str(probe["best"]["layer"]), str(probe["best"]["head"])]], marked
' "$tmp/probe.$dir.json" "$gold" "$tmp/maps.$dir.json" "$tmp/table.$dir"
done

# ---- --calibrate ----
# on a copy of the shipped model without its coreference head
model=$tmp/bare.en-zh.safetensors
"$py" "$here/strip_coref_head.py" "$models/en-zh.safetensors" "$model" || exit 1
cal=$tmp/cal.safetensors
best=$("$py" -c 'import json,sys; b=json.load(open(sys.argv[1]))["best"]; print(b["layer"], b["head"])' "$tmp/probe.en-zh.json")
read -r bl bh <<<"$best"
check "calibrate -o: exit 0" run 0 "${P[@]}" -m "$model" "$gold_en" --calibrate -o "$cal"
check "calibrate -o: says what it stored" out_has "calibrated: layer $bl, head $bh (accuracy"
check "calibrate -o: inspect shows the head" run 0 "$s2s" inspect "$cal"
check "calibrate -o: inspect line" out_has "^coreference head (encoder): layer $bl, head $bh\$"
check "calibrate -o: the input model is left alone" run 0 "$s2s" inspect "$model"
check "calibrate -o: no head in the original" bash -c "! grep -q 'coreference head' '$tmp/out'"
check "calibrate: table marks the stored plane" run 0 "${P[@]}" -m "$cal" "$gold_en"
check "calibrate: stored" bash -c "grep -E '^$bl +$bh ' '$tmp/out' | grep -q stored"
check "calibrate --json: the message on stderr" run 0 "${P[@]}" -m "$model" "$gold_en" --calibrate -o "$tmp/cal2.safetensors" --json
check "calibrate --json: stdout is JSON" pycheck 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out"
check "calibrate --json: stderr says it" err_has "calibrated: layer $bl, head $bh"
cp "$cal" "$tmp/inplace.safetensors"
check "calibrate in place: exit 0" run 0 "${P[@]}" -m "$tmp/inplace.safetensors" "$gold_en" --calibrate
check "calibrate in place: written" out_has "written to $tmp/inplace.safetensors"

# ---- align --map enc opens on the calibrated plane ----
enc_plane() {  # enc_plane MODEL: the plane align --map enc shows by default
  "$s2s" align -m "$1" --map enc --format json "the cat , it" |
    "$py" -c 'import json,sys; m=json.load(sys.stdin)["maps"]; print(len(m), m[0]["layer"], m[0]["head"])'
}
check "align --map enc: the coreference head by default" test "$(enc_plane "$cal")" = "1 $bl $bh"
al=$("$s2s" inspect "$model" | sed -n 's/^alignment head: layer \(.*\), head \(.*\)$/\1 \2/p')
check "align --map enc: else the alignment head, as before" test "$(enc_plane "$model")" = "1 $al"
check "align --map enc --layer/--head still choose" run 0 "$s2s" align -m "$cal" --map enc --format json --layer avg --head 3 "the cat , it"
check "align --map enc --layer/--head: that plane" pycheck 'import json,sys; m=json.load(open(sys.argv[1]))["maps"]; assert (m[0]["layer"], m[0]["head"]) == ("avg", 3), m' "$tmp/out"

# ---- --show ----
seed="The animal didn't cross the street because it was too tired."
check "show with gold: exit 0" run 0 "${P[@]}" -m "$cal" "$gold_en" --show "$seed"
check "show with gold: the stored plane" out_has "layer $bl, head $bh; antecedents from the gold file"
check "show with gold: the pronoun's row" out_has "^it (token 7)"
check "show with gold: antecedent marked" out_has "^   1  animal .*<- antecedent"
check "show with gold: itself left out" out_has "^   7  it .*(itself)"
check "show, a full model: nothing hidden" bash -c "! grep -q '(hidden)' '$tmp/out'"
# a model whose encoder heads see one key either side: the keys out of the
# window are marked hidden, the ones in it are not
"$s2s" init "$here/../configs/zh-en.yaml" -o "$tmp/local1.safetensors" --seed 3 \
  --set model.encoder_attention.type=local --set model.encoder_attention.window=1 >/dev/null 2>&1
check "show, local window 1: exit 0" run 0 "${P[@]}" -m "$tmp/local1.safetensors" --show "那只猫坐在垫子上，它看起来很舒服。" --layer 0 --head 0
check "show, local window 1: keys 7-9 seen, the rest hidden" pycheck '
import re, sys
rows = [l for l in open(sys.argv[1], encoding="utf-8") if re.match(r"^ +[0-9]+  ", l)]
assert len(rows) == 14, rows  # 13 tokens and </s>
for l in rows:
    k = int(l.split()[0])
    assert ("(hidden)" in l) == (abs(k - 8) > 1), l
' "$tmp/out"
check "show without gold: pronouns by list" run 0 "${P[@]}" -m "$models/zh-en.safetensors" --show "那只猫坐在垫子上，它看起来很舒服。" --layer 1 --head avg
check "show without gold: 它's row, layer 1" bash -c "grep -q '^它 (token 8)' '$tmp/out' && grep -q 'layer 1, head avg; pronouns by list' '$tmp/out'"
check "show --json: rows" run 0 "${P[@]}" -m "$cal" "$gold_en" --show "$seed" --json
check "show --json: the row sums with </s> to 1" pycheck '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["gold"] and len(o["rows"]) == 1 and o["rows"][0]["pronoun"] == 7 and o["rows"][0]["antecedent"] == 1, o
assert abs(sum(o["rows"][0]["weights"]) - 1) < 1e-3 and len(o["tokens"]) == len(o["rows"][0]["weights"]) == 13
' "$tmp/out"

# ---- bad lines, usage ----
{
  sed -n 1p "$gold_en"
  printf 'no tab here\n'
  printf 'the cat , it\tx\t\t3-2|\n'          # punctuation as antecedent
  printf 'the cat , it\tx\t\t3-9|\n'          # outside the sentence
  printf 'the cat , it\tx\t\t3-x|\n'          # not a link
  printf 'the cat , it\tx\t\t3-1\n'           # no |
  printf 'the cat , it\tx\n'                  # no coreference column: no link
  sed -n 2p "$gold_en"
} >"$tmp/bad.tsv"
check "bad lines: exit 3" run 3 "${P[@]}" -m "$model" "$tmp/bad.tsv"
check "bad lines: the good links counted" out_has "3 sentences, 2 links"
for n in 2 3 4 5 6; do
  check "bad lines: line $n warned" err_has "^s2s probe coref: $tmp/bad.tsv:$n: skipped: "
done
check "bad lines: a warning each" test "$(wc -l <"$tmp/err")" -eq 5
check "bad lines: the reason" err_has "bad.tsv:3: skipped: coreference link 3-2 has punctuation as antecedent"
printf 'the cat , it\tx\n' >"$tmp/nolinks.tsv"
check "no links: exit 2" run 2 "${P[@]}" -m "$model" "$tmp/nolinks.tsv"
check "no links: says so" err_has "no source-side coreference link to score"
check "missing gold file: exit 2" run 2 "${P[@]}" -m "$model" "$tmp/none.tsv"
check "missing gold file: names it" err_has "none.tsv: cannot open"
check "help: exit 0" run 0 "${P[@]}" --help
check "help: lists --calibrate" out_has "^  --calibrate"
check "help: lists --show" out_has "^  --show SENTENCE"
check "probe --help" run 0 "$s2s" probe --help
check "unknown option: exit 2" run 2 "${P[@]}" -m "$model" "$gold_en" --jsno
check "unknown option: did you mean" err_has "did you mean '--json'"
check "unknown probe: exit 2" run 2 "$s2s" probe corf
check "no gold: exit 2" run 2 "${P[@]}" -m "$model"
check "-o without --calibrate: exit 2" run 2 "${P[@]}" -m "$model" "$gold_en" -o "$tmp/x.safetensors"
check "--layer without --show: exit 2" run 2 "${P[@]}" -m "$model" "$gold_en" --layer 1
check "--layer out of range: exit 2" run 2 "${P[@]}" -m "$model" --show "it" --layer 2
check "--layer out of range: says the range" err_has "the model has 2 encoder layers"
check "unwritable -o: exit 1 before scoring" run 1 "${P[@]}" -m "$model" "$gold_en" --calibrate -o /nonexistent_dir_s2s/m.safetensors
check "unwritable -o: no table printed" test ! -s "$tmp/out"

# ---- probe scale, heads, equivariance (docs/attention-lab.md) ----
sents_zh=$tmp/sents.zh
sents_en=$tmp/sents.en
head -40 "$here/../data/corpus/test.zh-en.tsv" | cut -f1 >"$sents_zh"
head -40 "$here/../data/corpus/test.en-zh.tsv" | cut -f1 >"$sents_en"
check "scale: random table exit 0" run 0 "$s2s" probe scale --json
check "scale: 4 rows (d_k 32-256)" lines 4
check "scale: std as sqrt(d_k), scaled near 1" pycheck '
import json, sys, math
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["d_k"] for r in rows] == [32, 64, 128, 256], rows
for r in rows:
    assert set(r) >= {"d_k", "std_unscaled", "std_scaled", "max_weight_unscaled", "max_weight_scaled",
                      "entropy_unscaled", "entropy_scaled"}, r
    assert abs(r["std_unscaled"] / math.sqrt(r["d_k"]) - 1) < 0.1, r
    assert abs(r["std_scaled"] - 1) < 0.1, r
    assert r["max_weight_unscaled"] > 5 * r["max_weight_scaled"], r
' "$tmp/out"
check "scale: the same seed, the same table" run 0 "$s2s" probe scale --seed 1
cp "$tmp/out" "$tmp/scale1"
check "scale: text table" bash -c "[ \$(grep -cE '^ +(32|64|128|256) ' '$tmp/scale1') -eq 4 ]"
"$s2s" probe scale --seed 1 >"$tmp/scale1b"
check "scale: deterministic" cmp -s "$tmp/scale1" "$tmp/scale1b"
check "scale: --rows" run 0 "$s2s" probe scale --rows 64
check "scale: --rows says it" out_has "64 queries x 64 keys"
for dir in zh-en en-zh; do
  model=$models/$dir.safetensors
  sents=$sents_zh; [ "$dir" = en-zh ] && sents=$sents_en
  check "$dir: scale of the model's heads exit 0" run 0 "$s2s" probe scale -m "$model" "$sents" --json
  check "$dir: scale: 24 rows (2 + 2 + 2 layers x 4 heads)" lines 24
  check "$dir: scale: unscaled = sqrt(d_k) x scaled, saturates more" pycheck '
import json, sys, math
for l in open(sys.argv[1]):
    r = json.loads(l)
    assert r["map"] in ("enc", "self", "cross") and r["d_k"] == 32 and r["rows"] > 0, r
    assert abs(r["std_unscaled"] - math.sqrt(32) * r["std_scaled"]) < 1e-3 * r["std_unscaled"], r
    assert r["max_weight_unscaled"] >= r["max_weight_scaled"] - 1e-9, r
    assert r["entropy_unscaled"] <= r["entropy_scaled"] + 1e-9, r
' "$tmp/out"
  check "$dir: heads exit 0" run 0 "$s2s" probe heads -m "$model" "$sents" --json
  cp "$tmp/out" "$tmp/heads.$dir.json"
  for map in enc self cross; do
    "$s2s" align -m "$model" --beam 1 --map $map --layer all --head all --format json <"$sents" \
      >"$tmp/maps.$map.$dir.json"
  done
  check "$dir: heads = plain loops over align's maps" pycheck '
import json, math, sys
heads = [json.loads(l) for l in open(sys.argv[1])]
assert len(heads) == 24 and all(h["label"] in ("</s>", "previous", "next", "local", "content") for h in heads)
want = {}
for mp in ("enc", "self", "cross"):
    for l in open(sys.argv[2] + "/maps." + mp + "." + sys.argv[3] + ".json", encoding="utf-8"):
        for plane in json.loads(l)["maps"]:
            w = plane["weights"]
            acc = want.setdefault((mp, plane["layer"], plane["head"]), [0, 0.0, 0.0, 0.0, 0.0])
            for i, row in enumerate(w):
                keys = [j for j in range(len(row)) if mp != "self" or j <= i]
                if len(keys) < 2:
                    continue
                special = 0 if mp == "self" else len(row) - 1
                tot, run, k = sum(row[j] for j in keys), 0.0, 0
                for x in sorted((row[j] for j in keys), reverse=True):
                    if run >= 0.95 * tot:
                        break
                    run += x; k += 1
                acc[0] += 1
                acc[1] += sum(row[j] * abs(i - j) for j in keys)
                acc[2] -= sum(row[j] * math.log(row[j]) for j in keys if row[j] > 0)
                acc[3] += row[special]
                acc[4] += k
for h in heads:
    n, dist, ent, sp, width = want[(h["map"], h["layer"], h["head"])]
    assert h["rows"] == n, (h, n)
    for got, ref, tol in ((h["distance"], dist / n, 1e-3), (h["entropy"], ent / n, 2e-3),
                          (h["eos_share"], sp / n, 1e-4), (h["width95"], width / n, 0.03)):
        assert abs(got - ref) <= tol, (h, got, ref)
' "$tmp/heads.$dir.json" "$tmp" "$dir"
  check "$dir: heads text table" run 0 "$s2s" probe heads -m "$model" "$sents"
  check "$dir: heads: 24 rows with a label" \
    bash -c "[ \$(grep -cE '^(enc|self|cross) +[0-9]+ +[0-9]+ .* (</s>|previous|next|local|content) +full$' '$tmp/out') -eq 24 ]"
  check "$dir: equivariance exit 0" run 0 "$s2s" probe equivariance -m "$model" "$sents" --json
  check "$dir: equivariance: < 1e-5 without positions, > 0.1 with" pycheck '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 40, len(rows)
for r in rows:
    assert sorted(r["permutation"]) == list(range(r["rows"])), r
    assert r["without_positions"] < 1e-5, r
    assert r["with_positions"] > 0.1, r
' "$tmp/out"
done
check "equivariance: text summary" run 0 "$s2s" probe equivariance -m "$models/zh-en.safetensors" "$sents_zh"
check "equivariance: says the largest" out_has "^# largest over 40 sentences"
"$s2s" init "$here/data/ref/pre_relu_tied.yaml" --set model.encoder_attention.type=local --set model.encoder_attention.window=2 \
  -o "$tmp/local.safetensors" --seed 1 >/dev/null 2>&1
printf 'der hund\n' >"$tmp/de.txt"
check "equivariance: a local encoder is refused, exit 2" run 2 "$s2s" probe equivariance -m "$tmp/local.safetensors" "$tmp/de.txt"
check "equivariance: says why" err_has "^s2s probe equivariance: encoder layer 0, head 0 is local, window 2: it sees keys by position"
{ sed -n 1p "$sents_zh"; printf '\xff\xfe\n'; printf '\n'; sed -n 2p "$sents_zh"; } >"$tmp/badz.txt"
for sub in heads scale equivariance; do
  check "$sub: bad lines exit 3" run 3 "$s2s" probe $sub -m "$models/zh-en.safetensors" "$tmp/badz.txt"
  check "$sub: bad line warned" err_has "^s2s probe $sub: $tmp/badz.txt:2: skipped: "
  check "$sub: --help exit 0" run 0 "$s2s" probe $sub --help
  check "$sub: --help lists --json" out_has "^  --json"
  check "$sub: missing file exit 2" run 2 "$s2s" probe $sub -m "$models/zh-en.safetensors" "$tmp/none.txt"
  check "$sub: missing file named" err_has "^s2s probe $sub: $tmp/none.txt: cannot open"
  check "$sub: missing model exit 2" run 2 "$s2s" probe $sub -m "$tmp/none.safetensors" "$sents_zh"
  check "$sub: missing model one line" test "$(wc -l <"$tmp/err")" -eq 1
  check "$sub: bad flag exit 2" run 2 "$s2s" probe $sub -m "$models/zh-en.safetensors" --jsno
  check "$sub: bad flag did you mean" err_has "did you mean '--json'"
done
check "heads: needs a model, exit 2" run 2 "$s2s" probe heads "$sents_zh"
check "heads: says so" err_has "^s2s probe heads: FILE needs a model"
check "heads: no sentence, exit 2" run 2 "$s2s" probe heads -m "$models/zh-en.safetensors" /dev/null
check "scale: bad --rows, exit 2" run 2 "$s2s" probe scale --rows 1
check "scale: bad --seed, exit 2" run 2 "$s2s" probe scale --seed x1
check "scale: bad --seed, says so" err_has "^s2s probe scale: --seed x1 (decode.seed): expected an integer"
check "scale: another seed, another table" run 0 "$s2s" probe scale --seed 2
check "scale: another seed differs" bash -c "! cmp -s '$tmp/out' '$tmp/scale1'"
check "probe --help lists the probes" run 0 "$s2s" probe --help
check "probe --help: equivariance" out_has "^  equivariance"

finish cli_probe
