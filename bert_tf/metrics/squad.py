"""SQuAD predictions from start/end logits, and the official SQuAD metrics.

``write_predictions`` reproduces ``run_squad.py``'s function of the same name
(docs/original_bert.md §5): top-n start/end indexes per window, the discard rules, the SQuAD 2.0
null score (the minimum over an example's windows), ``get_final_text``, the
n-best list with softmax probabilities, and ``predictions.json``,
``nbest_predictions.json`` and (2.0) ``null_odds.json``.

One deliberate fix: with ``version_2_with_negative`` the original crashed with
AttributeError when every n-best entry was the null answer (issues #211, #417,
#476), because there was no best non-null entry. Here such a question is
predicted "" (no span survived, so no-answer is the only prediction there is),
and its ``null_odds.json`` value is ``score_null`` itself, i.e. the best
non-null score is taken as 0, the convention of the "empty" entry (and of the
Hugging Face port). Everything else is unchanged.

``evaluate_v1`` and ``evaluate_v2`` compute what the official
``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` scripts print.
"""

import collections
import json
import math
import re
import string

import tensorflow as tf
from absl import logging

from bert_tf.text import tokenization

__all__ = [
    "RawResult",
    "compute_exact",
    "compute_f1",
    "evaluate_v1",
    "evaluate_v2",
    "get_final_text",
    "normalize_answer",
    "write_predictions",
]

RawResult = collections.namedtuple(
    "RawResult", ["unique_id", "start_logits", "end_logits"]
)

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction",
    ["feature_index", "start_index", "end_index", "start_logit", "end_logit"],
)
_NbestPrediction = collections.namedtuple(
    "NbestPrediction", ["text", "start_logit", "end_logit"]
)


def _get_best_indexes(logits, n_best_size):
    """The indexes of the n_best_size largest logits (ties: lower index first)."""
    # sorted() is stable also with reverse=True, as in the original.
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def _compute_softmax(scores):
    """Softmax of a list of Python floats (empty for an empty list)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total_sum = sum(exp_scores)
    return [x / total_sum for x in exp_scores]


def _strip_spaces(text):
    """Returns text without " " and the map of its positions to text's."""
    ns_chars = []
    ns_to_s_map = {}
    for i, c in enumerate(text):
        if c == " ":
            continue
        ns_to_s_map[len(ns_chars)] = i
        ns_chars.append(c)
    return "".join(ns_chars), ns_to_s_map


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
    """Projects tokenized prediction text back onto the original text.

    `pred_text` is the normalised WordPiece span (e.g. "steve smith"), and
    `orig_text` the original words it came from (e.g. "Steve Smith's"). The
    original words are run through BasicTokenizer, the prediction is located
    in that, and the two are aligned character by character with spaces
    removed (BasicTokenizer only inserts/removes spaces, lower-cases and strips
    accents). When any step fails, the whole of `orig_text` is returned.
    """
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info(
                "Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text,
                tok_ns_text,
            )
        return orig_text

    tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}

    def orig_position(position):
        """The original text's index of a token-text index (None: unmapped)."""
        return orig_ns_to_s_map.get(tok_s_to_ns_map.get(position))

    orig_start_position = orig_position(start_position)
    if orig_start_position is None:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text

    orig_end_position = orig_position(end_position)
    if orig_end_position is None:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text

    return orig_text[orig_start_position : orig_end_position + 1]


def _write_json(path, obj):
    with tf.io.gfile.GFile(path, "w") as writer:
        writer.write(json.dumps(obj, indent=4) + "\n")


def write_predictions(
    all_examples,
    all_features,
    all_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
    verbose_logging=False,
):
    """Writes the final predictions and n-best lists; returns the predictions.

    Args:
      all_examples: the `SquadExample`s, in the order used for features.
      all_features: their `InputFeatures` (``example_index`` refers to
        all_examples).
      all_results: `RawResult`s, one per feature unique_id (logits as
        sequences of floats over max_seq_length positions).
      n_best_size: top-k start and end indexes considered, and the n-best
        list size.
      max_answer_length: longest answer, in WordPieces.
      do_lower_case: as the tokenizer (for get_final_text).
      output_prediction_file: predictions.json path ({qas_id: text}); None to
        skip writing.
      output_nbest_file: nbest_predictions.json path; None to skip.
      output_null_log_odds_file: null_odds.json path ({qas_id: score_diff}),
        written only with version_2_with_negative; None to skip.
      version_2_with_negative: SQuAD 2.0 null answers.
      null_score_diff_threshold: predict "" when score_null minus the best
        non-null score is greater than this.
      verbose_logging: log get_final_text's alignment failures.

    Returns:
      The ``collections.OrderedDict`` {qas_id: predicted text}. The n-best
      lists and score differences are written to the files.
    """
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)

    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)
    unique_id_to_result = {result.unique_id: result for result in all_results}

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for example_index, example in enumerate(all_examples):
        features = example_index_to_features[example_index]

        prelim_predictions = []
        # The null score of an example is its minimum over windows: the window
        # most confident that it holds the answer decides.
        score_null = 1000000
        min_null_feature_index = 0
        null_start_logit = 0
        null_end_logit = 0
        for feature_index, feature in enumerate(features):
            if feature.unique_id not in unique_id_to_result:
                raise ValueError(
                    f"question {example.qas_id}: no result for feature "
                    f"unique_id {feature.unique_id}"
                )
            result = unique_id_to_result[feature.unique_id]
            start_logits = [float(x) for x in result.start_logits]
            end_logits = [float(x) for x in result.end_logits]
            start_indexes = _get_best_indexes(start_logits, n_best_size)
            end_indexes = _get_best_indexes(end_logits, n_best_size)
            if version_2_with_negative:
                feature_null_score = start_logits[0] + end_logits[0]
                if feature_null_score < score_null:
                    score_null = feature_null_score
                    min_null_feature_index = feature_index
                    null_start_logit = start_logits[0]
                    null_end_logit = end_logits[0]
            num_tokens = len(feature.tokens)
            for start_index in start_indexes:
                for end_index in end_indexes:
                    # Indexes in the padding, in the query or [CLS]/[SEP], or
                    # starting where another window has more context, are not
                    # answers.
                    if start_index >= num_tokens or end_index >= num_tokens:
                        continue
                    if start_index not in feature.token_to_orig_map:
                        continue
                    if end_index not in feature.token_to_orig_map:
                        continue
                    if not feature.token_is_max_context.get(start_index, False):
                        continue
                    if end_index < start_index:
                        continue
                    if end_index - start_index + 1 > max_answer_length:
                        continue
                    prelim_predictions.append(
                        _PrelimPrediction(
                            feature_index=feature_index,
                            start_index=start_index,
                            end_index=end_index,
                            start_logit=start_logits[start_index],
                            end_logit=end_logits[end_index],
                        )
                    )

        if version_2_with_negative and features:
            prelim_predictions.append(
                _PrelimPrediction(
                    feature_index=min_null_feature_index,
                    start_index=0,
                    end_index=0,
                    start_logit=null_start_logit,
                    end_logit=null_end_logit,
                )
            )
        prelim_predictions = sorted(
            prelim_predictions,
            key=lambda x: x.start_logit + x.end_logit,
            reverse=True,
        )

        seen_predictions = set()
        nbest = []
        for pred in prelim_predictions:
            if len(nbest) >= n_best_size:
                break
            if pred.start_index > 0:  # A non-null prediction.
                feature = features[pred.feature_index]
                tok_tokens = feature.tokens[pred.start_index : pred.end_index + 1]
                orig_doc_start = feature.token_to_orig_map[pred.start_index]
                orig_doc_end = feature.token_to_orig_map[pred.end_index]
                orig_tokens = example.doc_tokens[orig_doc_start : orig_doc_end + 1]
                # De-tokenize WordPieces that have been split off.
                tok_text = " ".join(tok_tokens)
                tok_text = tok_text.replace(" ##", "")
                tok_text = tok_text.replace("##", "")
                # Clean whitespace.
                tok_text = " ".join(tok_text.strip().split())
                orig_text = " ".join(orig_tokens)
                final_text = get_final_text(
                    tok_text, orig_text, do_lower_case, verbose_logging
                )
                if final_text in seen_predictions:
                    continue
            else:
                final_text = ""
            seen_predictions.add(final_text)
            nbest.append(
                _NbestPrediction(
                    text=final_text,
                    start_logit=pred.start_logit,
                    end_logit=pred.end_logit,
                )
            )

        # SQuAD 2.0: the null answer is always in the n-best list.
        if version_2_with_negative and "" not in seen_predictions:
            nbest.append(
                _NbestPrediction(
                    text="", start_logit=null_start_logit, end_logit=null_end_logit
                )
            )
        # Rare: no valid candidate at all; avoid an empty list.
        if not nbest:
            nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))

        total_scores = []
        best_non_null_entry = None
        for entry in nbest:
            total_scores.append(entry.start_logit + entry.end_logit)
            if best_non_null_entry is None and entry.text:
                best_non_null_entry = entry
        probs = _compute_softmax(total_scores)

        nbest_json = []
        for i, entry in enumerate(nbest):
            output = collections.OrderedDict()
            output["text"] = entry.text
            output["probability"] = probs[i]
            output["start_logit"] = float(entry.start_logit)
            output["end_logit"] = float(entry.end_logit)
            nbest_json.append(output)

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        else:
            if best_non_null_entry is None:
                # Fix of the original's AttributeError: only the null answer
                # survived, so predict it; the best non-null score counts as 0.
                score_diff = float(score_null)
                all_predictions[example.qas_id] = ""
            else:
                score_diff = (
                    score_null
                    - best_non_null_entry.start_logit
                    - best_non_null_entry.end_logit
                )
                if score_diff > null_score_diff_threshold:
                    all_predictions[example.qas_id] = ""
                else:
                    all_predictions[example.qas_id] = best_non_null_entry.text
            scores_diff_json[example.qas_id] = float(score_diff)

        all_nbest_json[example.qas_id] = nbest_json

    if output_prediction_file:
        _write_json(output_prediction_file, all_predictions)
    if output_nbest_file:
        _write_json(output_nbest_file, all_nbest_json)
    if version_2_with_negative and output_null_log_odds_file:
        _write_json(output_null_log_odds_file, scores_diff_json)
    return all_predictions


# ---------------------------------------------------------------------------
# Official evaluation (evaluate-v1.1.py / evaluate-v2.0.py).

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s):
    """Lower-cases, removes ASCII punctuation and articles, fixes whitespace."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    """1 when the normalised answers are equal, else 0."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    """Bag-of-tokens F1 of the normalised answers (v2.0 rule).

    When either side has no tokens, F1 is 1 if both have none, else 0.
    """
    gold_toks = _get_tokens(a_gold)
    pred_toks = _get_tokens(a_pred)
    if not gold_toks or not pred_toks:
        return int(gold_toks == pred_toks)
    return _token_f1(pred_toks, gold_toks)


def _f1_v1(prediction, ground_truth):
    # v1.1's f1_score: an empty side simply gives 0 (no 1-for-both-empty rule).
    return _token_f1(
        normalize_answer(prediction).split(), normalize_answer(ground_truth).split()
    )


def _token_f1(prediction_tokens, ground_truth_tokens):
    """The F1 of the tokens two answers share (0 when none)."""
    common = collections.Counter(prediction_tokens) & collections.Counter(
        ground_truth_tokens
    )
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def _articles(dataset):
    """The article list of a dataset json (the whole dict or its "data")."""
    if isinstance(dataset, dict):
        return dataset["data"]
    return dataset


def _questions(dataset):
    for article in _articles(dataset):
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
    """SQuAD 1.1 exact match and F1, as evaluate-v1.1.py.

    Args:
      dataset: the dataset json (dict with "data", or the "data" list).
      predictions: {question id: predicted text}. A missing question scores 0
        (with a warning), as in the official script.

    Returns:
      {"exact_match": ..., "f1": ...}, percentages; each question scores its
      maximum over the gold answers.
    """
    f1 = exact_match = total = 0
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qa["id"])
            continue
        ground_truths = [answer["text"] for answer in qa["answers"]]
        prediction = predictions[qa["id"]]
        exact_match += max(
            float(normalize_answer(prediction) == normalize_answer(gt))
            for gt in ground_truths
        )
        f1 += max(_f1_v1(prediction, gt) for gt in ground_truths)
    return {
        "exact_match": 100.0 * exact_match / total,
        "f1": 100.0 * f1 / total,
    }


def _find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    """Best score over no-answer thresholds, and the threshold reaching it."""
    num_no_ans = sum(1 for has_ans in qid_to_has_ans.values() if not has_ans)
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        elif preds[qid]:
            diff = -1
        else:
            diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """SQuAD 2.0 metrics, as evaluate-v2.0.py.

    Args:
      dataset: the dataset json (dict with "data", or the "data" list).
      predictions: {question id: predicted text}; "" means no answer.
        Missing questions are left out of the scores (with a warning), as the
        official script does.
      na_probs: {question id: no-answer probability or score}, e.g. BERT's
        null_odds.json. None means 0.0 for every question.
      na_prob_thresh: a question whose na_prob is above this is scored as a
        no-answer prediction.

    Returns:
      A dict with "exact", "f1", "total"; "HasAns_exact", "HasAns_f1",
      "HasAns_total" and "NoAns_*" when there are such questions; and, when
      na_probs is given, "best_exact", "best_exact_thresh", "best_f1",
      "best_f1_thresh".
    """
    na_probs_given = na_probs is not None
    if not na_probs_given:
        na_probs = {k: 0.0 for k in predictions}

    qid_to_has_ans = {}
    exact_raw = {}
    f1_raw = {}
    for qa in _questions(dataset):
        qid = qa["id"]
        qid_to_has_ans[qid] = bool(qa["answers"])
        # Gold answers that normalise to nothing count as no-answer.
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
            gold_answers = [""]
        if qid not in predictions:
            logging.warning("Missing prediction for %s", qid)
            continue
        a_pred = predictions[qid]
        exact_raw[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_raw[qid] = max(compute_f1(a, a_pred) for a in gold_answers)

    def apply_threshold(scores):
        new_scores = {}
        for qid, score in scores.items():
            if na_probs[qid] > na_prob_thresh:
                new_scores[qid] = float(not qid_to_has_ans[qid])
            else:
                new_scores[qid] = score
        return new_scores

    exact_thresh = apply_threshold(exact_raw)
    f1_thresh = apply_threshold(f1_raw)

    def eval_dict(qid_list):
        qid_list = [qid for qid in qid_list if qid in exact_thresh]
        total = len(qid_list)
        if not total:
            return {"exact": 0.0, "f1": 0.0, "total": 0}
        return {
            "exact": 100.0 * sum(exact_thresh[k] for k in qid_list) / total,
            "f1": 100.0 * sum(f1_thresh[k] for k in qid_list) / total,
            "total": total,
        }

    out_eval = collections.OrderedDict(eval_dict(list(exact_thresh)))
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    for prefix, qids in (("HasAns", has_ans_qids), ("NoAns", no_ans_qids)):
        if qids:
            for key, value in eval_dict(qids).items():
                out_eval[f"{prefix}_{key}"] = value
    if na_probs_given and exact_raw:
        best_exact, exact_t = _find_best_thresh(
            predictions, exact_raw, na_probs, qid_to_has_ans
        )
        best_f1, f1_t = _find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans)
        out_eval["best_exact"] = best_exact
        out_eval["best_exact_thresh"] = exact_t
        out_eval["best_f1"] = best_f1
        out_eval["best_f1_thresh"] = f1_t
    return dict(out_eval)
