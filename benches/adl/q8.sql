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
         nMuon + nElectron AS n,
         array_concat(p4(Muon_pt, Muon_eta, Muon_phi, Muon_mass),
                      p4(Electron_pt, Electron_eta, Electron_phi, Electron_mass)) AS v
  FROM events
  WHERE nMuon + nElectron >= 3
), candidates AS (
  -- every pair with its flavours and charges; keep the same-flavour, opposite-charge ones
  SELECT *, array_filter(
           arrays_zip(array_transform(pairs(n), c -> c['i']), array_transform(pairs(n), c -> c['j']),
                      list_select(flavour, array_transform(pairs(n), c -> c['i'])),
                      list_select(flavour, array_transform(pairs(n), c -> c['j'])),
                      list_select(q, array_transform(pairs(n), c -> c['i'])),
                      list_select(q, array_transform(pairs(n), c -> c['j']))),
           z -> z['3'] = z['4'] AND z['5'] <> z['6']) AS z
  FROM leptons
), sfos AS (
  SELECT *, array_transform(z, c -> c['1']) AS i, array_transform(z, c -> c['2']) AS j
  FROM candidates
  WHERE cardinality(z) > 0
), paired AS (
  SELECT *, argmin(array_transform(inv_mass(list_select(v, i), list_select(v, j)),
                                   x -> abs(x - 91.2))) AS b
  FROM sfos
), third AS (
  -- the leptons outside the pair, in order
  SELECT MET_pt, MET_phi, pt, phi,
         array_except(range(1, n + 1), make_array(i[b], j[b])) AS others
  FROM paired
), best AS (
  -- the leading one of them (the first on a tie)
  SELECT *, others[argmax(list_select(pt, others))] AS l FROM third
)
SELECT transverse_mass(pt[l], phi[l], MET_pt, MET_phi) AS x
FROM best
