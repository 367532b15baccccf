-- ADL Q8: in events with at least three light leptons and a same-flavour
-- opposite-charge pair, take the pair whose invariant mass is closest to
-- 91.2 GeV; x is the transverse mass of the missing momentum and the
-- highest-pt light lepton outside that pair. Leptons are the muons, then
-- the electrons; ties go to the first pair and the first lepton.
WITH leptons AS (
  SELECT MET_pt, MET_phi,
         array_concat(Muon_pt, Electron_pt) AS pt,
         array_concat(Muon_eta, Electron_eta) AS eta,
         array_concat(Muon_phi, Electron_phi) AS phi,
         array_concat(Muon_mass, Electron_mass) AS m,
         array_concat(Muon_charge, Electron_charge) AS q,
         array_concat(array_repeat(0, nMuon), array_repeat(1, nElectron)) AS flavour,
         nMuon + nElectron AS n
  FROM events
  WHERE nMuon + nElectron >= 3
), sfos AS (
  SELECT *, array_filter(pairs(n), p -> flavour[p['i']] = flavour[p['j']] AND q[p['i']] <> q[p['j']]) AS z
  FROM leptons
), scored AS (
  SELECT *, array_transform(z, p -> abs(inv_mass(pt[p['i']], eta[p['i']], phi[p['i']], m[p['i']],
                                                 pt[p['j']], eta[p['j']], phi[p['j']], m[p['j']]) - 91.2)) AS d
  FROM sfos
  WHERE cardinality(z) > 0
), paired AS (
  SELECT *, z[argmin(d)] AS b FROM scored
), third AS (
  -- the leading lepton outside the pair: argmax passes over the NULLs
  SELECT MET_pt, MET_phi, pt, phi,
         argmax(array_transform(range(1, n + 1), k ->
             CASE WHEN k = b['i'] OR k = b['j'] THEN NULL ELSE pt[k] END)) AS l
  FROM paired
)
SELECT transverse_mass(pt[l], phi[l], MET_pt, MET_phi) AS x
FROM third
