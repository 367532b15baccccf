-- ADL Q7: per event, the scalar sum of the transverse momenta of the jets
-- with pt > 30 GeV that are not within delta R 0.4 of any light lepton
-- (muon or electron) with pt > 10 GeV; 0 when no jet qualifies.
-- min_delta_r gives each jet's distance to the nearest such lepton.
WITH leptons AS (
  SELECT Jet_pt, Jet_eta, Jet_phi,
         array_concat(array_filter(arrays_zip(Muon_pt, Muon_eta, Muon_phi), z -> z['1'] > 10),
                      array_filter(arrays_zip(Electron_pt, Electron_eta, Electron_phi), z -> z['1'] > 10)) AS l
  FROM events
)
SELECT coalesce(array_sum(array_transform(
         array_filter(
           arrays_zip(Jet_pt, min_delta_r(Jet_eta, Jet_phi,
                                          array_transform(l, z -> z['2']), array_transform(l, z -> z['3']))),
           z -> z['1'] > 30 AND z['2'] >= 0.4),
         z -> CAST(z['1'] AS DOUBLE))), 0.0) AS x
FROM leptons
