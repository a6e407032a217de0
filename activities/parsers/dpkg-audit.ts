// `dpkg --audit` (-C): the packages dpkg left in a broken state, one per line under a sentence that
// says which state (" kubelet              Node agent for Kubernetes clusters"); nothing when all is well.
// dpkg prints each list as ` %-20s %s` (enquiry.c, describebriefly), a blank line after each.

export interface DpkgAudit {
  /** Package names (architecture qualifier dropped), in the order dpkg listed them. */
  packages: string[];
  /** The sentences dpkg opened each list with, first line only ("The following packages have been unpacked but not yet configured."). */
  problems: string[];
}

export function parseDpkgAudit(text: string): DpkgAudit {
  const packages: string[] = [];
  const problems: string[] = [];
  let head = true;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      head = true;
      continue;
    }
    const entry = /^ ([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?(?:\s|$)/.exec(line);
    if (entry) {
      if (!packages.includes(entry[1]!)) packages.push(entry[1]!);
      head = false;
    } else if (head && /^The following packages /.test(line)) {
      problems.push(line.trim());
      head = false;
    }
  }
  return { packages, problems };
}
