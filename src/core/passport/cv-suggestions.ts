// From a CV's text to suggestions: the sections a CV is made of (experience, skills, education and
// the rest) are found by their headings; skills are the dictionary's names met in the skills section
// (any alias) or anywhere else (only names that are no ordinary word); experience entries are the
// lines of the experience section that carry a date range, with the title and company written
// beside or above it and the lines below as the description. Heuristics, for a preview the user
// reviews before anything is saved. Every pattern here is linear in its input.
import { SKILLS_DICTIONARY } from './skills-dictionary.js'
import { CV_TEXT_SEARCHED_MAX, type CvPreview, type SuggestedExperience } from './cv.types.js'
import { COMPANY_MAX, EXPERIENCE_DESCRIPTION_MAX, EXPERIENCE_MAX, EXPERIENCE_TITLE_MAX, HEADLINE_MAX, SKILLS_MAX } from './passport.types.js'

type Section = 'top' | 'experience' | 'skills' | 'education' | 'other'

const HEADINGS: ReadonlyArray<[Section, RegExp]> = [
  ['experience', /^(work |professional |employment |relevant |career )?(experience|history|employment( history)?|work history|career)$/],
  ['skills', /^((technical|key|core|professional) )?(skills|competencies|technologies|tech stack|expertise|skills (and|&) (tools|technologies))$/],
  ['education', /^(education|academic background|qualifications|education (and|&) training)$/],
  ['other', /^(summary|profile|about( me)?|objective|projects|personal projects|languages|certifications?|certificates|awards|interests|hobbies|publications|references|volunteering|volunteer experience|contact|contact details)$/]
]

/** A line that is a heading: short, and one of the known names (any case, a trailing colon allowed). */
function headingOf (line: string): Section | undefined {
  if (line.length > 40) return undefined
  const name = line.toLowerCase().replace(/[:\s]+$/, '').replace(/\s+/g, ' ')
  return HEADINGS.find(([, pattern]) => pattern.test(name))?.[0]
}

interface Line { text: string, section: Section }

function linesOf (text: string): Line[] {
  const lines: Line[] = []
  let section: Section = 'top'
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+/g, ' ').trim()
    if (line === '') continue
    const heading = headingOf(line)
    if (heading !== undefined) {
      section = heading
      continue
    }
    lines.push({ text: line, section })
  }
  return lines
}

// Skills.

interface Entry { name: string, freeText: boolean }

const BY_ALIAS: ReadonlyMap<string, Entry> = new Map(SKILLS_DICTIONARY.flatMap((skill) => {
  const entry = { name: skill.name, freeText: skill.freeText !== false }
  return [skill.name, ...(skill.aliases ?? [])].map((alias) => [alias.toLowerCase(), entry] as const)
}))
const LONGEST_ALIAS_WORDS = Math.max(...[...BY_ALIAS.keys()].map((a) => a.split(' ').length))

/** Words as CVs write skill names: letters and digits with the marks names use (C++, C#, Node.js, CI/CD). */
const WORD = /[A-Za-z0-9.#+/-]*[A-Za-z0-9#+]/g

function wordsOf (text: string): string[] {
  return (text.match(WORD) ?? []).map((w) => w.replace(/^[.\-/]+/, ''))
}

/** Dictionary names in `text`: the longest alias at each word, of those `allowed` takes. */
function skillsIn (text: string, allowed: (entry: Entry) => boolean, found: string[], seen: Set<string>): void {
  const words = wordsOf(text)
  for (let i = 0; i < words.length; i++) {
    for (let n = Math.min(LONGEST_ALIAS_WORDS, words.length - i); n >= 1; n--) {
      const entry = BY_ALIAS.get(words.slice(i, i + n).join(' ').toLowerCase())
      if (entry === undefined || !allowed(entry)) continue
      if (!seen.has(entry.name)) {
        seen.add(entry.name)
        found.push(entry.name)
      }
      i += n - 1
      break
    }
  }
}

/** Each item of a skills list on its own (commas, bullets, pipes, slashes between words). */
function listItems (line: string): string[] {
  return line.replace(/^[^:]{1,30}:\s*/, '').split(/[,;|•·●▪]|\s[-–—]\s|\t/).map((item) => item.trim()).filter((item) => item !== '')
}

function suggestSkills (lines: readonly Line[]): string[] {
  const found: string[] = []
  const seen = new Set<string>()
  for (const line of lines) {
    if (line.section !== 'skills') continue
    for (const item of listItems(line.text)) {
      // A whole item that is a name ("Go") counts whatever the name; inside prose only plain ones.
      const whole = BY_ALIAS.get(item.toLowerCase())
      if (whole !== undefined) skillsIn(whole.name, () => true, found, seen)
      else skillsIn(item, () => true, found, seen)
    }
  }
  for (const line of lines) {
    if (line.section !== 'skills') skillsIn(line.text, (entry) => entry.freeText, found, seen)
  }
  return found.slice(0, SKILLS_MAX)
}

// Experience.

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const MONTH_NAME = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\\.?'
const DATE = `(?:${MONTH_NAME}\\s+(\\d{4})|(\\d{1,2})[/.](\\d{4})|(\\d{4})-(\\d{2})|(\\d{4}))`
const END = `(?:${DATE}|(present|current|now|today|ongoing))`
/** "Jan 2019 – Mar 2021", "03/2019 - present", "2019-03 to 2021-06", "2017 – 2019". */
const RANGE = new RegExp(`(?:^|[\\s(,|])${DATE}\\s*(?:-|–|—|to|until)\\s*${END}(?=$|[\\s),|])`, 'i')

/** A month YYYY-MM from the groups of one DATE (`atEnd`: a bare year means its December). */
function monthOf (groups: ReadonlyArray<string | undefined>, atEnd: boolean): string | undefined {
  const [name, year1, month2, year2, year3, month3, year4] = groups
  let year: number, month: number
  if (name !== undefined && year1 !== undefined) { year = Number(year1); month = MONTHS.indexOf(name.slice(0, 3).toLowerCase()) + 1 } else if (month2 !== undefined && year2 !== undefined) { year = Number(year2); month = Number(month2) } else if (year3 !== undefined && month3 !== undefined) { year = Number(year3); month = Number(month3) } else if (year4 !== undefined) { year = Number(year4); month = atEnd ? 12 : 1 } else return undefined
  if (year < 1900 || year > 2100 || month < 1 || month > 12) return undefined
  return `${year}-${String(month).padStart(2, '0')}`
}

interface DateRange { start: string, end: string | null, rest: string }

function rangeIn (line: string): DateRange | undefined {
  const match = RANGE.exec(line)
  if (match === null) return undefined
  const groups = match.slice(1)
  const start = monthOf(groups.slice(0, 7), false)
  const current = groups[14] !== undefined
  const end = current ? null : monthOf(groups.slice(7, 14), true)
  if (start === undefined || end === undefined || (end !== null && end < start)) return undefined
  const rest = (line.slice(0, match.index) + ' ' + line.slice(match.index + match[0].length)).replace(/[\s,|()–—-]+$/, '').replace(/^[\s,|()–—-]+/, '').trim()
  return { start, end, rest }
}

/** "Engineer at Acme", "Engineer @ Acme", "Engineer, Acme", "Engineer – Acme", "Engineer | Acme". */
function titleAndCompany (text: string): { title: string, company: string } {
  const match = /^(.+?)\s+(?:at|@)\s+(.+)$/i.exec(text) ?? /^(.+?)\s*(?:,|\||\s[–—-]\s)\s*(.+)$/.exec(text)
  const [title, company] = match === null ? [text, ''] : [match[1] ?? '', match[2] ?? '']
  return { title: title.trim().slice(0, EXPERIENCE_TITLE_MAX), company: company.trim().slice(0, COMPANY_MAX) }
}

function suggestExperience (lines: readonly Line[]): SuggestedExperience[] {
  const section = lines.filter((l) => l.section === 'experience').map((l) => l.text)
  const entries: SuggestedExperience[] = []
  let current: { entry: SuggestedExperience, description: string[] } | undefined
  const finish = (): void => {
    if (current === undefined) return
    current.entry.description = current.description.join('\n').slice(0, EXPERIENCE_DESCRIPTION_MAX)
    entries.push(current.entry)
    current = undefined
  }
  let unclaimed: string | undefined
  for (const text of section) {
    const range = rangeIn(text)
    if (range === undefined) {
      if (current === undefined) unclaimed = text
      else current.description.push(text.replace(/^[-•*▪●]\s*/, ''))
      continue
    }
    // A heading line above the dates ("Engineer at Acme" / "Jan 2019 – now") belongs to this entry.
    if (current !== undefined && range.rest === '' && current.description.length > 0) unclaimed = current.description.pop()
    finish()
    const named = titleAndCompany(range.rest !== '' ? range.rest : unclaimed ?? '')
    unclaimed = undefined
    if (named.title === '') continue
    current = { entry: { ...named, startDate: range.start, endDate: range.end, description: '' }, description: [] }
    if (entries.length >= EXPERIENCE_MAX) break
  }
  finish()
  return entries.slice(0, EXPERIENCE_MAX)
}

// Headline.

const CONTACT = /@|https?:|www\.|\+?\d[\d\s().-]{6,}/i

/** The line under the name at the top of the CV, unless it is contact details. */
function suggestHeadline (lines: readonly Line[]): string | undefined {
  const top = lines.filter((l) => l.section === 'top').slice(1, 4)
  const line = top.find((l) => !CONTACT.test(l.text) && /[A-Za-z]/.test(l.text) && l.text.length <= HEADLINE_MAX)
  return line?.text
}

export function suggestFromText (text: string): CvPreview {
  const lines = linesOf(text.slice(0, CV_TEXT_SEARCHED_MAX))
  const headline = suggestHeadline(lines)
  return {
    skills: suggestSkills(lines),
    experience: suggestExperience(lines),
    ...(headline === undefined ? {} : { headline }),
    textLength: text.length
  }
}
