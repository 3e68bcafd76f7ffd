// What CV parsing finds in a file (DECISIONS §10): the preview `POST /api/cv/parse` answers, and what
// an import merges into a passport. Computed in a child process under a memory limit (src/compute/cv.process.ts).

export const CV_MAX_BYTES = 5 * 1024 * 1024
/** Text read past this many characters is counted (`textLength`) but not searched for suggestions. */
export const CV_TEXT_SEARCHED_MAX = 200_000

export interface SuggestedExperience {
  title: string
  /** Empty when the CV's line named no company; such an entry is shown, not imported. */
  company: string
  /** YYYY-MM */
  startDate: string
  /** YYYY-MM, or null for a current position. */
  endDate: string | null
  description: string
}

export interface CvPreview {
  /** Canonical skill names (skills-dictionary.ts), in the order the CV first names them. */
  skills: string[]
  experience: SuggestedExperience[]
  headline?: string
  /** Characters of text the file held. */
  textLength: number
}

/** Why a file gave no preview; each becomes a 400 `UnreadableFile` naming the file field. */
export type CvRefusal =
  | 'unsupported-type' | 'encrypted' | 'corrupt' | 'no-text' | 'zip-bomb' | 'too-complex'

/** The parser's answer: a preview, or a refusal with the reason in words. */
export type CvParseResult =
  | { ok: true, preview: CvPreview }
  | { ok: false, refusal: CvRefusal, reason: string }
