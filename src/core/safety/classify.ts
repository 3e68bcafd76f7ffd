// Local content classification for triage (DECISIONS §11): no network, deterministic (the same text
// always gets the same labels and scores), versioned by `model`. Two parts:
// - abuse: the `obscenity` library's English dataset with its recommended transformers (leetspeak,
//   confusable characters, repeated letters, spacing tricks), counting distinct matched terms;
// - spam: heuristics that ship here, each a feature scaled to [0, 1] and weighted, squashed by a
//   logistic curve: links, promotional phrases, shouting (capital letters), repeated words, runs of
//   `!`/`$`, and contact details (e-mail addresses, phone numbers).
//
// Labels and thresholds (documented in README.md):
//   abuse = 1 − 0.5^n for n distinct abusive terms (1 term 0.5, 2 terms 0.75, 3 terms 0.875)
//   spam  = 1 / (1 + e^−(Σ wᵢ·fᵢ − 3))  (≈ 0.05 for ordinary prose)
//   clean = 1 − max(abuse, spam)
//   flagged when abuse ≥ 0.5 or spam ≥ 0.7
// Changing a dataset, weight or threshold changes MODEL, so stored labels say what produced them.
import { RegExpMatcher, englishDataset, englishRecommendedTransformers } from 'obscenity'
import type { Classification, ClassifierLabel } from './safety.types.js'

export const CLASSIFIER_MODEL = 'canvas-safety-1 (obscenity 0.4.6 english; spam heuristics v1)'
export const ABUSE_THRESHOLD = 0.5
export const SPAM_THRESHOLD = 0.7

const abuseMatcher = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers })

const SPAM_PHRASES = [
  'buy now', 'click here', 'free money', 'earn money', 'make money', 'work from home', 'limited offer', 'limited time',
  'act now', 'order now', '100% free', 'risk free', 'no cost', 'winner', 'you have won', 'congratulations you',
  'cheap', 'discount', 'casino', 'crypto', 'bitcoin', 'viagra', 'cialis', 'loan', 'investment opportunity',
  'double your', 'subscribe', 'follow me', 'dm me', 'whatsapp', 'telegram', 'promo code', 'special offer'
]

const URL = /\bhttps?:\/\/\S+|\bwww\.\S+/gi
const EMAIL = /\b[\w.+-]+@[\w-]+\.[\w.-]+\b/g
const PHONE = /\+?\d[\d\s().-]{8,}\d/g

/** Feature weights of the spam score (each feature is in [0, 1]). */
const WEIGHTS = { links: 2.5, phrases: 3, shouting: 1.5, repetition: 2, punctuation: 1, contacts: 1.5 }
const BIAS = 3

function count (text: string, pattern: RegExp): number {
  return text.match(pattern)?.length ?? 0
}

function spamScore (text: string): number {
  const lower = text.toLowerCase()
  const words = lower.split(/\s+/).filter((w) => w !== '')
  const letters = text.replace(/[^A-Za-z]/g, '')
  const upper = text.replace(/[^A-Z]/g, '').length
  const distinct = new Set(words).size
  const features = {
    links: Math.min(1, count(text, URL) / 3),
    phrases: Math.min(1, SPAM_PHRASES.filter((p) => lower.includes(p)).length / 3),
    // Only meaningful over some letters: "OK" is not shouting.
    shouting: letters.length >= 20 ? Math.max(0, (upper / letters.length - 0.5) * 2) : 0,
    // Share of words that repeat an earlier one, past what prose has (about half).
    repetition: words.length >= 10 ? Math.max(0, (1 - distinct / words.length - 0.5) * 2) : 0,
    punctuation: Math.min(1, count(text, /[!$€£]{3,}/g) / 3),
    contacts: Math.min(1, (count(text, EMAIL) + count(text, PHONE)) / 2)
  }
  const sum = (Object.keys(WEIGHTS) as Array<keyof typeof WEIGHTS>).reduce((total, name) => total + WEIGHTS[name] * features[name], 0)
  return 1 / (1 + Math.exp(-(sum - BIAS)))
}

function abuseScore (text: string): number {
  const terms = new Set(abuseMatcher.getAllMatches(text).map((m) => m.termId))
  return 1 - 0.5 ** terms.size
}

const round = (score: number): number => Math.round(score * 1000) / 1000

/** Labels `spam`, `abuse`, `clean` with scores in [0, 1], highest first. */
export function classifyText (text: string): Classification {
  const abuse = round(abuseScore(text))
  const spam = round(spamScore(text))
  const clean = round(1 - Math.max(abuse, spam))
  const labels: ClassifierLabel[] = [{ label: 'spam', score: spam }, { label: 'abuse', score: abuse }, { label: 'clean', score: clean }]
  labels.sort((a, b) => b.score - a.score || a.label.localeCompare(b.label))
  return { labels, flagged: abuse >= ABUSE_THRESHOLD || spam >= SPAM_THRESHOLD, model: CLASSIFIER_MODEL }
}
